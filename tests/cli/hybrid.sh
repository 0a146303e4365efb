#!/usr/bin/env bash
# `defo run` with the rigid and hybrid integrators (MMDJ01 §2.6–2.8):
#   - validation: a hybrid/rigid body with fixed nodes, plasticity or an
#     embedded surface under hybrid, no mass (density 0), restitution out of [0, 1], impact_radius <= 0, fragment_size
#     <= 0, the toughness (fracture.threshold) <= 0 and r_frac
#     (fracture.radius) <= 0 — each exit 2 with one line naming the JSON
#     path, from `defo validate` and `defo run` (no output folder);
#   - a slab dropped on a block's edge (examples/scenes/mmdj01_corner.json,
#     coarser): stats.jsonl counts impacts, cracks and fragments; the slab
#     is gone from summary.json's final bodies and its pieces "slab.<k>" are
#     there; the last .vtu holds every piece (meshio: points and cells, the
#     body_id values are the pieces' world indices, the tensile and the
#     compressive principal stress fields present and finite); the frame of
#     an impact shows both (max > 0 > min somewhere);
#   - --frames N then --resume across the break (pieces made after the
#     resume point) gives the same files byte for byte; 2 threads too.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_hybrid"
rm -rf "$T"; mkdir -p "$T"
R=("$DEFO" run --threads 1 --quiet)

check_invalid() { # name, json, expected line (after "FILE: ")
  local f="$T/$1.json"
  printf '%s' "$2" > "$f"
  "$DEFO" validate "$f" > "$T/out" 2> "$T/err"; local got=$?
  [ "$got" = 2 ] && ok || bad "$1: validate exit $got (want 2)"
  grep -qxF "$f: $3" "$T/err" && ok || bad "$1: want '$3', got: $(cat "$T/err")"
  "${R[@]}" "$f" -o "$T/o_$1" > "$T/out" 2> "$T/err"; got=$?
  [ "$got" = 2 ] && ok || bad "$1: run exit $got (want 2)"
  grep -qF "$3" "$T/err" && ok || bad "$1: run message: $(cat "$T/err")"
  [ ! -e "$T/o_$1" ] && ok || bad "$1: run created its output folder"
}
body='"generator": {"type": "box", "cells": 2}, "fracture": {"threshold": 1e6}'
scene() { # $1 integrator keys, $2 body keys
  printf '{"integrator": {"type": "hybrid"%s}, "bodies": [{%s%s}]}\n' "$1" "$body" "$2"
}
check_invalid fixed "$(scene '' ', "fixed": [{"plane": {"point": [0, 0, 0], "normal": [1, 0, 0]}}]')" \
  'bodies[0].fixed: a body under the hybrid integrator moves as one rigid piece and cannot have fixed nodes: support it with a collider'
check_invalid plastic "$(scene '' ', "plasticity": {"yield": 0.1}')" \
  "bodies[0].plasticity: not available under the hybrid integrator (MMDJ01 §2.4's rest-shape reset at impacts is not built): its bodies deform only while an impact lasts"
check_invalid restitution "$(scene ', "restitution": 1.5' '')" 'integrator.restitution: 1.5 is not in [0, 1]'
check_invalid radius "$(scene ', "impact_radius": 0' '')" 'integrator.impact_radius: 0 is not in (0, 10]'
check_invalid fragment "$(scene ', "fragment_size": -1' '')" 'integrator.fragment_size: -1 is not > 0'
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n' > "$T/tri.obj"
check_invalid embedded "$(scene '' ', "embedded": {"file": "tri.obj"}')" \
  'bodies[0].embedded: not available under the hybrid integrator (its fragments become new bodies, which do not take the embedded surface'"'"'s pieces): use "fracture" under another integrator, or remove "embedded"'
check_invalid mass "$(scene '' ', "material": {"density": 0}')" \
  'bodies[0].material.density: 0 is not > 0'
check_invalid toughness '{"integrator": {"type": "hybrid"}, "bodies": [{"generator": {"type": "box"}, "fracture": {"threshold": 0}}]}' \
  'bodies[0].fracture.threshold: 0 is not > 0'
check_invalid rfrac '{"integrator": {"type": "hybrid"}, "bodies": [{"generator": {"type": "box"}, "fracture": {"threshold": 1e6, "radius": 0}}]}' \
  'bodies[0].fracture.radius: 0 is not > 0'
printf '{"integrator": {"type": "rigid"}, "bodies": [{"generator": {"type": "box"}, "fixed": [{"plane": {"point": [0, 0, 0], "normal": [1, 0, 0]}}]}]}' > "$T/rigidfix.json"
"$DEFO" validate "$T/rigidfix.json" > "$T/out" 2> "$T/err"
grep -qF "bodies[0].fixed: a body under the rigid integrator moves as one rigid piece" "$T/err" && ok || bad "rigid fixed: $(cat "$T/err")"

# the corner drop, coarser (the break comes in frame ~21)
sed 's/"cells": \[20, 10, 2\]/"cells": [12, 6, 2]/; s/"frames": 60/"frames": 26/' \
  "$DEFO_SRC/examples/scenes/mmdj01_corner.json" | sed 's/"png": {[^}]*}/"png": false/' > "$T/corner.json"
"${R[@]}" "$T/corner.json" -o "$T/full" > "$T/log" 2>&1 || bad "corner run: $(tail -3 "$T/log")"
$py - "$T/full" <<'PY' && ok || bad "corner: impacts / pieces / fields"
import sys, os, json, meshio, numpy as np
d = sys.argv[1]
st = [json.loads(l) for l in open(os.path.join(d, "stats.jsonl"))]
for k in ("impacts", "fragments", "cracks"):
    assert all(k in s for s in st), k
imp, frag, cracks = (sum(s[k] for s in st) for k in ("impacts", "fragments", "cracks"))
print("impacts", imp, "cracks", cracks, "pieces made", frag)
assert imp >= 1 and cracks >= 1 and frag >= 2
sm = json.load(open(os.path.join(d, "summary.json")))
names = [b["name"] for b in sm["final"]["bodies"]]
print("final bodies", names)
assert "slab" not in names and len(names) >= 2 and all(n.startswith("slab.") for n in names)
last = meshio.read(os.path.join(d, "frames/frame_%04d.vtu" % (len(st) - 1)))
ids = np.unique(last.cell_data["body_id"][0])
assert len(ids) == len(names) and ids.min() >= 1, ids
assert len(last.points) == sum(b["nodes"] for b in sm["final"]["bodies"])
seen = False
for f in range(len(st)):
    m = meshio.read(os.path.join(d, "frames/frame_%04d.vtu" % f))
    mx, mn = m.cell_data["max_principal_stress"][0], m.cell_data["min_principal_stress"][0]
    assert np.all(np.isfinite(mx)) and np.all(np.isfinite(mn))
    if mx.max() > 1e5 and mn.min() < -1e5:
        seen = True
        print("frame", f, "shows an impact: tension up to %.3g Pa, compression down to %.3g Pa" % (mx.max(), mn.min()))
assert seen, "no frame shows an impact's stresses"
PY
# resume across the break, and 2 threads
"${R[@]}" "$T/corner.json" -o "$T/part" --frames 15 > "$T/log" 2>&1 || bad "partial run: $(tail -3 "$T/log")"
"$DEFO" run --threads 1 --quiet --resume "$T/part" > "$T/log" 2>&1 || bad "resume: $(tail -3 "$T/log")"
"${R[@]}" "$T/corner.json" -o "$T/th2" --threads 2 > "$T/log" 2>&1 || bad "2-thread run: $(tail -3 "$T/log")"
for f in frames/frame_0015.vtu frames/frame_0022.vtu frames/frame_0026.vtu surface/frame_0026.obj checkpoint.bin; do
  cmp -s "$T/full/$f" "$T/part/$f" && ok || bad "resumed $f differs"
  cmp -s "$T/full/$f" "$T/th2/$f" && ok || bad "2 threads: $f differs"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
