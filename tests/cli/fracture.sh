#!/usr/bin/env bash
# `defo run` with fracture (scene key bodies[i].fracture: MMDJ01 §2.5
# planes after MG04 §4's criterion):
#   - validation: threshold (toughness) missing, <= 0, not a number; radius
#     (r_frac) <= 0; crack_speed <= 0; sliver out of [0, 0.45]; "fracture"
#     not an object; a misspelt key with its suggestion — each exit 2 with one line naming the JSON path, from
#     both `defo validate` and `defo run` (which then creates no output
#     folder); fracture on an invertible body under newmark is accepted;
#   - examples/scenes/tear.json breaks once, into 2 pieces: stats.jsonl
#     counts one crack, splits > 0 in one frame and the body ends in 2
#     components; the last .vtu has more points than the first (one per
#     split) and at least as many cells, meshio reads it with the documented
#     fields and as many points as summary.json's nodes; every point's rest
#     position (points − displacement) lies in the rest box; the moving
#     handle's points are exactly at X + v·t (the kinematic handle follows
#     its motion: analytic) with velocity v; the surface OBJ gains faces
#     (crack faces) and stays closed (every edge in an even number of
#     triangles: the boundary of a tet set has no boundary);
#   - the same scene under newmark, bdf2, quasistatic and static: 2 pieces,
#     one crack (fracture does not depend on the integrator);
#   - --frames 6 then --resume to 10, the crack after the resume point
#     (frame 7; a crack growing across a checkpoint: test_fracture), gives
#     the same .vtu/.obj/.png files and checkpoint byte for byte as an
#     uninterrupted run; 1 and 2 threads give byte-identical outputs;
#   - a checkpoint of the previous version (1) is refused with exit 2 and a
#     message naming the version;
#   - defo render reads the run folder (point counts differ between frames);
#   - a frame that fails after splitting exits 1 with one line and leaves the
#     body as it was at the frame's start;
#   - an embedded surface through the break (tear_capsule.json): one closed
#     surface per piece, volumes kept, the same after a resume.
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
check_invalid missing "$(scene '"fracture": {"radius": 0.1}' backward_euler)" \
  'bodies[0].fracture: needs "threshold" (the largest principal stress that breaks, Pa > 0)'
check_invalid zero "$(scene '"fracture": {"threshold": 0}' backward_euler)" \
  'bodies[0].fracture.threshold: 0 is not > 0'
check_invalid negative "$(scene '"fracture": {"threshold": -5e3}' backward_euler)" \
  'bodies[0].fracture.threshold: -5000 is not > 0'
check_invalid string "$(scene '"fracture": {"threshold": "60 kPa"}' backward_euler)" \
  'bodies[0].fracture.threshold: expected a number, got a string'
check_invalid type "$(scene '"fracture": 6e4' backward_euler)" \
  'bodies[0].fracture: expected an object, got a number'
check_invalid typo "$(scene '"fracture": {"threshold": 6e4, "radiu": 2}' backward_euler)" \
  "bodies[0].fracture.radiu: unknown key (did you mean 'radius'?)"
check_invalid radius "$(scene '"fracture": {"threshold": 6e4, "radius": 0}' backward_euler)" \
  'bodies[0].fracture.radius: 0 is not > 0'
check_invalid radiusneg "$(scene '"fracture": {"threshold": 6e4, "radius": -0.1}' backward_euler)" \
  'bodies[0].fracture.radius: -0.1 is not > 0'
check_invalid speed "$(scene '"fracture": {"threshold": 6e4, "crack_speed": 0}' backward_euler)" \
  'bodies[0].fracture.crack_speed: 0 is not > 0'
check_invalid sliver "$(scene '"fracture": {"threshold": 6e4, "sliver": 0.5}' backward_euler)" \
  'bodies[0].fracture.sliver: 0.5 is not in [0, 0.45]'
# fracture on the default invertible body under newmark is accepted
printf '{"bodies": [{"generator": {"type": "box", "cells": 2}, "fracture": {"threshold": 6e4}}]}' > "$T/nm.json"
"$DEFO" validate "$T/nm.json" > "$T/out" 2>&1 && ok || bad "invertible newmark fracture refused: $(cat "$T/out")"
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n' > "$T/tri.obj"
# a valid fracture object is accepted (and a moving handle with backward_euler)
scene '"fracture": {"threshold": 6e4, "radius": 0.3, "crack_speed": 100, "sliver": 0.1}, "fixed": [{"plane": {"point": [0, 0, 0], "normal": [1, 0, 0]}, "motion": {"velocity": [1, 0, 0]}}]' backward_euler > "$T/good.json"
"$DEFO" validate "$T/good.json" > "$T/out" 2>&1 && ok || bad "valid fracture scene refused: $(cat "$T/out")"

# 2. the tear example: 10 frames, then the checks
"${R[@]}" "$TEAR" -o "$T/full" --frames 10 > "$T/log" 2>&1 || bad "tear run: $(tail -3 "$T/log")"
$py - "$T/full" <<'PY' && ok || bad "tear: splits / components / vtu / handle / surface checks"
import sys, os, json, meshio, numpy as np
d = sys.argv[1]
st = [json.loads(l) for l in open(os.path.join(d, "stats.jsonl"))]
assert len(st) == 11
for s in st:  # the existing keys are kept, the new ones added
    for k in ("frame", "time", "wall_ms", "substeps", "newton_iters", "cg_iters", "residual",
              "dt", "inverted_peak", "collisions", "inverted", "min_J", "kinetic_energy",
              "elastic_energy", "bodies", "splits", "cracks", "held", "unresolved"):
        assert k in s, k
    for k in ("name", "inverted", "volume_ratio", "components"):
        assert k in s["bodies"][0], k
splits = [s["splits"] for s in st]
comps = [s["bodies"][0]["components"] for s in st]
print("splits per frame", splits, "components", comps)
assert splits[0] == 0 and comps[0] == 1
# one crack, two pieces
assert sum(s["cracks"] for s in st) == 1 and sum(splits) > 0, (splits, comps)
assert comps[-1] == 2
first = meshio.read(os.path.join(d, "frames/frame_0000.vtu"))
last = meshio.read(os.path.join(d, "frames/frame_0010.vtu"))
sm = json.load(open(os.path.join(d, "summary.json")))
b = sm["final"]["bodies"][0]
assert sm["status"] == "completed"
assert len(last.points) > len(first.points), (len(last.points), len(first.points))
assert len(last.points) == b["nodes"] and b["components"] >= 2, b
# one new node per split
assert len(last.points) - len(first.points) == sum(splits), (len(last.points), sum(splits))
assert last.cells[0].type == "tetra" and len(last.cells[0].data) == b["elements"]
assert len(last.cells[0].data) >= len(first.cells[0].data)
for k in ("displacement", "velocity"):
    assert last.point_data[k].shape == (len(last.points), 3), k
    assert np.all(np.isfinite(last.point_data[k])), k
for k in ("J", "inverted", "von_mises", "max_principal_stress", "plastic_strain", "body_id"):
    assert k in last.cell_data and np.all(np.isfinite(last.cell_data[k][0])), k
# rest positions: all in the rest box (a cut point lies on an edge, a copy on its node)
rest = last.points - last.point_data["displacement"]
lo, hi = np.array([0, -0.05, 0.25]) - 1e-12, np.array([0.4, 0.05, 0.35]) + 1e-12
assert np.all(rest >= lo) and np.all(rest <= hi), "a rest position outside the rest box"
# the handle (rest x = 0.4) moves at 0.1 m/s in x: at t = 10/30 s it is at X + v t
X = last.points - last.point_data["displacement"]
h = np.abs(X[:, 0] - 0.4) < 1e-9
t = st[-1]["time"]
assert h.sum() >= 16, h.sum()
assert np.abs(last.point_data["displacement"][h] - [0.1 * t, 0, 0]).max() < 1e-12
assert np.abs(last.point_data["velocity"][h] - [0.1, 0, 0]).max() < 1e-9
# the clamped end (rest x = 0) does not move
c = np.abs(X[:, 0]) < 1e-9
assert c.sum() >= 16 and np.abs(last.point_data["displacement"][c]).max() == 0
# surface: crack faces added; closed (every edge in an even number of faces)
def faces(p):
    return [[int(w.split("/")[0]) for w in l.split()[1:4]] for l in open(p) if l.startswith("f ")]
f0, f4 = faces(os.path.join(d, "surface/frame_0000.obj")), faces(os.path.join(d, "surface/frame_0010.obj"))
assert len(f4) > len(f0), (len(f4), len(f0))
from collections import Counter
e = Counter()
for f in f4:
    for a, b2 in ((f[0], f[1]), (f[1], f[2]), (f[2], f[0])):
        e[(min(a, b2), max(a, b2))] += 1
assert all(n % 2 == 0 for n in e.values()), "open surface"
PY
[ -s "$T/full/png/frame_0010.png" ] && ok || bad "tear: no png"
# the same two pieces under every integrator
for it in newmark bdf2 quasistatic static; do
  sed "s/\"type\": \"backward_euler\", \"time_step\": 0.005, \"rayleigh_mass\": 1.0/\"type\": \"$it\"/" "$TEAR" > "$T/tear_$it.json"
  "${R[@]}" "$T/tear_$it.json" -o "$T/i_$it" --frames 10 > "$T/log" 2>&1 || bad "tear $it: $(tail -3 "$T/log")"
  $py - "$T/i_$it" <<'PY' && ok || bad "tear under $it: not one crack into two pieces"
import sys, json
st = [json.loads(l) for l in open(sys.argv[1] + "/stats.jsonl")]
assert sum(s["cracks"] for s in st) == 1 and st[-1]["bodies"][0]["components"] == 2
PY
done

# 3. resume: the crack (frame 7) after the resume point (frame 6)
"${R[@]}" "$TEAR" -o "$T/part" --frames 6 > "$T/log" 2>&1 || bad "partial run: $(tail -3 "$T/log")"
"$DEFO" run --threads 1 --quiet --resume "$T/part" --frames 10 > "$T/log" 2>&1 || bad "resume: $(tail -3 "$T/log")"
$py - "$T/part" <<'PY' && ok || bad "resumed run: the crack not after the resume point"
import sys, json
st = [json.loads(l) for l in open(sys.argv[1] + "/stats.jsonl")]
assert sum(s["splits"] for s in st[:7]) == 0 and sum(s["splits"] for s in st[7:]) > 0, [s["splits"] for s in st]
PY
"${R[@]}" "$TEAR" -o "$T/th2" --frames 10 --threads 2 > "$T/log" 2>&1 || bad "2-thread run: $(tail -3 "$T/log")"
for k in 0000 0006 0007 0008 0010; do
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
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "checkpoint version 1, this defo reads version 6 only" "$T/err" \
  && ok || bad "old checkpoint message: $(cat "$T/err")"

# 5. defo render reads the run folder (frames whose point counts differ)
"$DEFO" render "$T/full" -o "$T/sheet.png" --sheet > "$T/out" 2>&1 && [ -s "$T/sheet.png" ] \
  && ok || bad "defo render of the torn run: $(cat "$T/out")"

# 6. a step that fails after a crack in the same frame: the box's end is
#    dragged at 1e153 m/s, a crack opens in the second substep and that
#    substep's residual overflows; exit 1 with one line,
#    and the state goes back to the frame's start (summary: 27 nodes),
#    frame 0 stays valid
printf '{"duration": {"frames": 3}, "integrator": {"type": "backward_euler"}, "bodies": [{"name": "rocket", "formulation": "corotated", "generator": {"type": "box", "cells": 2}, "fracture": {"threshold": 1e3}, "fixed": [{"plane": {"point": [-0.5, 0, 0], "normal": [1, 0, 0]}}, {"plane": {"point": [0.5, 0, 0], "normal": [-1, 0, 0]}, "motion": {"velocity": [1e153, 0, 0]}}]}], "outputs": {"png": false}}' > "$T/nan.json"
"${R[@]}" "$T/nan.json" -o "$T/nan" > "$T/out" 2> "$T/err"; rc=$?
[ "$rc" = 1 ] && ok || bad "failing fracture step: exit $rc (want 1)"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "^defo run: frame 1: body 'rocket'" "$T/err" && ok || bad "failing step message: $(cat "$T/err")"
grep -q '"status": "failed"' "$T/nan/summary.json" && grep -q '"nodes": 27,' "$T/nan/summary.json" \
  && ok || bad "failed frame not rolled back: $(grep -o '"nodes": [0-9]*' "$T/nan/summary.json")"
$py -c "import meshio,sys; assert len(meshio.read(sys.argv[1]).points) == 27" "$T/nan/frames/frame_0000.vtu" && ok || bad "frame 0 after a failed step"

# 7. an embedded surface through fracture (MG04 §5.2,
#    examples/scenes/tear_capsule.json): the capsule inside the tear bar is
#    one closed surface until the bar breaks, then one closed surface per
#    piece (every directed edge's reverse exactly once, the components
#    connected through shared vertices), positive volumes summing to the
#    capsule's changed as the bar's volume (stats volume_ratio, within
#    0.5 %); a run resumed after the break
#    writes the same surface byte for byte
CAPS="$T/tear_capsule.json"
$py - "$DEFO_SRC/examples/scenes" "$CAPS" <<'PY' || bad "capsule scene"
import sys, json
sc = json.load(open(sys.argv[1] + "/tear_capsule.json"))
sc["bodies"][0]["embedded"]["file"] = sys.argv[1] + "/capsule.obj"
sc["outputs"] = {"png": False}
json.dump(sc, open(sys.argv[2], "w"))
PY
"${R[@]}" "$CAPS" -o "$T/caps" > "$T/log" 2>&1 || bad "capsule run: $(tail -3 "$T/log")"
$py - "$T/caps" "$DEFO_SRC/examples/scenes/capsule.obj" <<'PY' && ok || bad "capsule: the cut surfaces are not closed pieces"
import sys, json, collections
import numpy as np
def load(path):
    V, F = [], []
    for l in open(path):
        if l.startswith("v "): V.append([float(t) for t in l.split()[1:4]])
        elif l.startswith("f "): F.append([int(t.split("/")[0]) - 1 for t in l.split()[1:4]])
    return np.array(V), np.array(F)
def pieces(path):
    V, F = load(path)
    par = list(range(len(V)))
    def find(a):
        while par[a] != a: par[a] = par[par[a]]; a = par[a]
        return a
    for f in F:
        for k in (1, 2):
            a, b = find(f[0]), find(f[k])
            if a != b: par[max(a, b)] = min(a, b)
    ed = collections.Counter((f[k], f[(k + 1) % 3]) for f in F for k in range(3))
    assert all(n == 1 and ed.get((b, a), 0) == 1 for (a, b), n in ed.items()), path + ": open"
    root = np.array([find(f[0]) for f in F])
    vols = []
    for r in sorted(set(root)):
        a, b, c = (V[F[root == r][:, k]] for k in range(3))
        vols.append(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6)
    return vols
d = sys.argv[1]
V0 = pieces(sys.argv[2])[0]
st = [json.loads(l) for l in open(d + "/stats.jsonl")]
brk = next(s["frame"] for s in st if s["cracks"] > 0)
for s in st:
    v = pieces(d + "/surface/frame_%04d.obj" % s["frame"])
    assert len(v) == (1 if s["frame"] < brk else 2), (s["frame"], len(v))
    ratio = s["bodies"][0]["volume_ratio"]
    assert min(v) > 0 and abs(sum(v) / V0 - ratio) < 0.005, (s["frame"], v, V0, ratio)
print("capsule: breaks at frame", brk, "pieces", v, "of", V0)
PY
"${R[@]}" "$CAPS" -o "$T/capr" --frames 9 > "$T/log" 2>&1 || bad "capsule partial run: $(tail -3 "$T/log")"
"$DEFO" run --threads 1 --quiet --resume "$T/capr" > "$T/log" 2>&1 || bad "capsule resume: $(tail -3 "$T/log")"
cmp -s "$T/caps/surface/frame_0012.obj" "$T/capr/surface/frame_0012.obj" && ok || bad "capsule: resumed surface differs"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
