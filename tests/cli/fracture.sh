#!/usr/bin/env bash
# `defo run` with MG04 §4 fracture (scene key bodies[i].fracture, issue 7):
#   - validation: threshold missing, <= 0, not a number; "fracture" not an
#     object; a misspelt key with its suggestion; a bad seed / max_splits;
#     fracture together with "embedded" — each exit 2 with one line naming
#     the JSON path, from both `defo validate` and `defo run` (which then
#     creates no output folder);
#     fracture on an invertible body under newmark is accepted;
#   - examples/scenes/tear.json tears: stats.jsonl counts splits > 0 and the
#     body ends in >= 2 components, within the 2 frames the example test
#     runs; the last .vtu has more points than the first, meshio reads it
#     with the documented fields and as many points as summary.json's nodes;
#     every point's rest position (points − displacement) is a rest position
#     of frame 0 (a split copy is displaced from its parent's rest position);
#     the moving handle's points are exactly at X + v·t (the kinematic handle
#     follows its motion: analytic) with velocity v; the surface OBJ gains
#     faces (crack faces) and stays closed (every edge in an even number of
#     triangles: the boundary of a tet set has no boundary);
#   - --frames 1 then --resume to 4, across splits before and after frame 1,
#     gives the same .vtu/.obj/.png files and checkpoint byte for byte as an
#     uninterrupted run; 1 and 2 threads give byte-identical outputs;
#   - a checkpoint of the previous version (1) is refused with exit 2 and a
#     message naming the version;
#   - defo render reads the run folder (point counts differ between frames);
#   - a frame that fails after splitting exits 1 with one line and leaves the
#     body as it was at the frame's start.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_fracture"
rm -rf "$T"; mkdir -p "$T"
R=("$DEFO" run --threads 1 --quiet)
TEAR="$DEFO_SRC/examples/scenes/tear.json"

# 1. validation: FILE: path: reason, one line each, exit 2 (validate and run)
body='"formulation": "corotated", "generator": {"type": "box", "cells": 2}'
scene() { # $1 = the body's extra keys, $2 = integrator type
  printf '{"integrator": {"type": "%s"}, "bodies": [{%s, %s}]}\n' "$2" "$body" "$1"
}
check_invalid() { # name, json, expected line (after "FILE: ")
  local f="$T/$1.json"
  printf '%s' "$2" > "$f"
  "$DEFO" validate "$f" > "$T/out" 2> "$T/err"; local got=$?
  [ "$got" = 2 ] && ok || bad "$1: validate exit $got (want 2)"
  [ "$(wc -l < "$T/err")" = 1 ] && ok || bad "$1: validate printed $(wc -l < "$T/err") lines: $(cat "$T/err")"
  grep -qxF "$f: $3" "$T/err" && ok || bad "$1: want '$3', got: $(cat "$T/err")"
  "${R[@]}" "$f" -o "$T/o_$1" > "$T/out" 2> "$T/err"; got=$?
  [ "$got" = 2 ] && ok || bad "$1: run exit $got (want 2)"
  [ "$(wc -l < "$T/err")" = 1 ] && ok || bad "$1: run printed $(wc -l < "$T/err") lines"
  grep -qF "$3" "$T/err" && ok || bad "$1: run message: $(cat "$T/err")"
  [ ! -e "$T/o_$1" ] && ok || bad "$1: run created its output folder"
}
check_invalid missing "$(scene '"fracture": {"seed": 3}' backward_euler)" \
  'bodies[0].fracture: needs "threshold" (the largest principal stress that breaks, Pa > 0)'
check_invalid zero "$(scene '"fracture": {"threshold": 0}' backward_euler)" \
  'bodies[0].fracture.threshold: 0 is not > 0'
check_invalid negative "$(scene '"fracture": {"threshold": -5e3}' backward_euler)" \
  'bodies[0].fracture.threshold: -5000 is not > 0'
check_invalid string "$(scene '"fracture": {"threshold": "60 kPa"}' backward_euler)" \
  'bodies[0].fracture.threshold: expected a number, got a string'
check_invalid type "$(scene '"fracture": 6e4' backward_euler)" \
  'bodies[0].fracture: expected an object, got a number'
check_invalid typo "$(scene '"fracture": {"threshold": 6e4, "max_split": 2}' backward_euler)" \
  "bodies[0].fracture.max_split: unknown key (did you mean 'max_splits'?)"
check_invalid seed "$(scene '"fracture": {"threshold": 6e4, "seed": -1}' backward_euler)" \
  'bodies[0].fracture.seed: -1 is not >= 0'
check_invalid seedfrac "$(scene '"fracture": {"threshold": 6e4, "seed": 1.5}' backward_euler)" \
  'bodies[0].fracture.seed: expected an integer, got a fraction'
check_invalid splits "$(scene '"fracture": {"threshold": 6e4, "max_splits": -1}' backward_euler)" \
  'bodies[0].fracture.max_splits: -1 is not in [0, 1000000000]'
# fracture on the default invertible body under newmark is accepted
printf '{"bodies": [{"generator": {"type": "box", "cells": 2}, "fracture": {"threshold": 6e4}}]}' > "$T/nm.json"
"$DEFO" validate "$T/nm.json" > "$T/out" 2>&1 && ok || bad "invertible newmark fracture refused: $(cat "$T/out")"
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n' > "$T/tri.obj"
check_invalid embedded "$(scene '"fracture": {"threshold": 6e4}, "embedded": {"file": "tri.obj"}' backward_euler)" \
  'bodies[0].embedded: not available on a body with "fracture" yet (cutting an embedded surface along the cracks, MG04 §5.2, is not implemented): a fracturing body writes its tet boundary surface; remove "embedded"'
# a valid fracture object is accepted (and a moving handle with backward_euler)
scene '"fracture": {"threshold": 6e4, "seed": 7, "max_splits": 0}, "fixed": [{"plane": {"point": [0, 0, 0], "normal": [1, 0, 0]}, "motion": {"velocity": [1, 0, 0]}}]' backward_euler > "$T/good.json"
"$DEFO" validate "$T/good.json" > "$T/out" 2>&1 && ok || bad "valid fracture scene refused: $(cat "$T/out")"

# 2. the tear example: 4 frames, then the checks
"${R[@]}" "$TEAR" -o "$T/full" --frames 4 > "$T/log" 2>&1 || bad "tear run: $(tail -3 "$T/log")"
$py - "$T/full" <<'PY' && ok || bad "tear: splits / components / vtu / handle / surface checks"
import sys, os, json, meshio, numpy as np
d = sys.argv[1]
st = [json.loads(l) for l in open(os.path.join(d, "stats.jsonl"))]
assert len(st) == 5
for s in st:  # the existing keys are kept, the new ones added
    for k in ("frame", "time", "wall_ms", "substeps", "newton_iters", "cg_iters", "residual",
              "dt", "inverted_peak", "collisions", "inverted", "min_J", "kinetic_energy",
              "elastic_energy", "bodies", "splits"):
        assert k in s, k
    for k in ("name", "inverted", "volume_ratio", "components"):
        assert k in s["bodies"][0], k
splits = [s["splits"] for s in st]
comps = [s["bodies"][0]["components"] for s in st]
print("splits per frame", splits, "components", comps)
assert splits[0] == 0 and comps[0] == 1
# it tears within the 2 frames the example test runs
assert sum(splits[:3]) > 0 and comps[2] >= 2, (splits, comps)
assert comps[-1] >= 2
first = meshio.read(os.path.join(d, "frames/frame_0000.vtu"))
last = meshio.read(os.path.join(d, "frames/frame_0004.vtu"))
sm = json.load(open(os.path.join(d, "summary.json")))
b = sm["final"]["bodies"][0]
assert sm["status"] == "completed"
assert len(last.points) > len(first.points), (len(last.points), len(first.points))
assert len(last.points) == b["nodes"] and b["components"] >= 2, b
# one new node per split
assert len(last.points) - len(first.points) == sum(splits), (len(last.points), sum(splits))
assert last.cells[0].type == "tetra" and len(last.cells[0].data) == b["elements"]
assert len(last.cells[0].data) == len(first.cells[0].data)
for k in ("displacement", "velocity"):
    assert last.point_data[k].shape == (len(last.points), 3), k
    assert np.all(np.isfinite(last.point_data[k])), k
for k in ("J", "inverted", "von_mises", "max_principal_stress", "plastic_strain", "body_id"):
    assert k in last.cell_data and np.all(np.isfinite(last.cell_data[k][0])), k
# rest positions: every point's is one of frame 0's (a split copy's is its parent's)
rest0 = {tuple(p) for p in np.round(first.points - first.point_data["displacement"], 12)}
rest = np.round(last.points - last.point_data["displacement"], 12)
assert all(tuple(p) in rest0 for p in rest), "a point's rest position is not an original one"
# the handle (rest x = 0.4) moves at 0.5 m/s in x: at t = 4/30 s it is at X + v t
X = last.points - last.point_data["displacement"]
h = np.abs(X[:, 0] - 0.4) < 1e-9
t = st[-1]["time"]
assert h.sum() >= 16, h.sum()
assert np.abs(last.point_data["displacement"][h] - [0.5 * t, 0, 0]).max() < 1e-12
assert np.abs(last.point_data["velocity"][h] - [0.5, 0, 0]).max() < 1e-9
# the clamped end (rest x = 0) does not move
c = np.abs(X[:, 0]) < 1e-9
assert c.sum() >= 16 and np.abs(last.point_data["displacement"][c]).max() == 0
# surface: crack faces added; closed (every edge in an even number of faces)
def faces(p):
    return [[int(w.split("/")[0]) for w in l.split()[1:4]] for l in open(p) if l.startswith("f ")]
f0, f4 = faces(os.path.join(d, "surface/frame_0000.obj")), faces(os.path.join(d, "surface/frame_0004.obj"))
assert len(f4) > len(f0), (len(f4), len(f0))
from collections import Counter
e = Counter()
for f in f4:
    for a, b2 in ((f[0], f[1]), (f[1], f[2]), (f[2], f[0])):
        e[(min(a, b2), max(a, b2))] += 1
assert all(n % 2 == 0 for n in e.values()), "open surface"
PY
[ -s "$T/full/png/frame_0004.png" ] && ok || bad "tear: no png"

# 3. resume across fracture events: splits happen in frame 1 (before the
#    checkpoint) and in frame 2 (after it)
"${R[@]}" "$TEAR" -o "$T/part" --frames 1 > "$T/log" 2>&1 || bad "partial run: $(tail -3 "$T/log")"
"$DEFO" run --threads 1 --quiet --resume "$T/part" --frames 4 > "$T/log" 2>&1 || bad "resume: $(tail -3 "$T/log")"
$py - "$T/part" <<'PY' && ok || bad "resumed run: no split before and after the resume point"
import sys, json
st = [json.loads(l) for l in open(sys.argv[1] + "/stats.jsonl")]
assert st[1]["splits"] > 0 and sum(s["splits"] for s in st[2:]) > 0, [s["splits"] for s in st]
PY
"${R[@]}" "$TEAR" -o "$T/th2" --frames 4 --threads 2 > "$T/log" 2>&1 || bad "2-thread run: $(tail -3 "$T/log")"
for k in 0000 0001 0002 0003 0004; do
  for f in frames/frame_$k.vtu surface/frame_$k.obj png/frame_$k.png; do
    cmp -s "$T/full/$f" "$T/part/$f" && ok || bad "resumed $f differs"
    cmp -s "$T/full/$f" "$T/th2/$f" && ok || bad "2 threads: $f differs"
  done
done
cmp -s "$T/full/checkpoint.bin" "$T/part/checkpoint.bin" && ok || bad "resumed checkpoint differs"
cmp -s "$T/full/checkpoint.bin" "$T/th2/checkpoint.bin" && ok || bad "2 threads: checkpoint differs"
cmp -s "$T/full/scene.pvd" "$T/part/scene.pvd" && ok || bad "resumed scene.pvd differs"

# 4. an old-version checkpoint (version 1, valid checksum) is refused
cp -r "$T/part" "$T/old"
$py - "$T/old/checkpoint.bin" <<'PY' || bad "could not patch the checkpoint"
import sys, struct
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[8:12] = struct.pack("<I", 1)
h = 14695981039346656037
for c in b[:-8]:
    h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
b[-8:] = struct.pack("<Q", h)
open(p, "wb").write(b)
PY
"$DEFO" run --threads 1 --resume "$T/old" --frames 6 > "$T/out" 2> "$T/err"; rc=$?
[ "$rc" = 2 ] && ok || bad "old checkpoint: exit $rc (want 2)"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "checkpoint version 1, this defo reads version 5 only" "$T/err" \
  && ok || bad "old checkpoint message: $(cat "$T/err")"

# 5. defo render reads the run folder (frames whose point counts differ)
"$DEFO" render "$T/full" -o "$T/sheet.png" --sheet > "$T/out" 2>&1 && [ -s "$T/sheet.png" ] \
  && ok || bad "defo render of the torn run: $(cat "$T/out")"

# 6. a step that fails after splits in the same frame: the box's end is
#    dragged at 1e153 m/s, it splits in the second substep (measured: 7
#    splits) and that substep's residual overflows; exit 1 with one line,
#    and the state goes back to the frame's start (summary: 27 nodes),
#    frame 0 stays valid
printf '{"duration": {"frames": 3}, "integrator": {"type": "backward_euler"}, "bodies": [{"name": "rocket", "formulation": "corotated", "generator": {"type": "box", "cells": 2}, "fracture": {"threshold": 1e3, "max_splits": 0}, "fixed": [{"plane": {"point": [-0.5, 0, 0], "normal": [1, 0, 0]}}, {"plane": {"point": [0.5, 0, 0], "normal": [-1, 0, 0]}, "motion": {"velocity": [1e153, 0, 0]}}]}], "outputs": {"png": false}}' > "$T/nan.json"
"${R[@]}" "$T/nan.json" -o "$T/nan" > "$T/out" 2> "$T/err"; rc=$?
[ "$rc" = 1 ] && ok || bad "failing fracture step: exit $rc (want 1)"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "^defo run: frame 1: body 'rocket'" "$T/err" && ok || bad "failing step message: $(cat "$T/err")"
grep -q '"status": "failed"' "$T/nan/summary.json" && grep -q '"nodes": 27,' "$T/nan/summary.json" \
  && ok || bad "failed frame not rolled back: $(grep -o '"nodes": [0-9]*' "$T/nan/summary.json")"
$py -c "import meshio,sys; assert len(meshio.read(sys.argv[1]).points) == 27" "$T/nan/frames/frame_0000.vtu" && ok || bad "frame 0 after a failed step"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
