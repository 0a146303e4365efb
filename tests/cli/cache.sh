#!/usr/bin/env bash
# Blender point caches (outputs.pc2, outputs.mdd; src/cli/point_cache.c):
#   - a tet4 sphere, a tet10 box and a tet4 box around an embedded surface
#     (data/meshes/eight.off), falling for 4 frames: cache/NAME.obj (rest
#     surface), NAME.pc2 and NAME.mdd per body, listed in summary.json; read
#     back here independently (struct, numpy): the .pc2 header ("POINTCACHE2",
#     version 1, vertices, start 0, sampling 1, 5 samples), the .mdd header
#     (5 frames, the same vertices, times k/fps); the rest OBJ has the
#     vertices of the body's object in every frame OBJ, and sample k of both
#     caches is frame k's OBJ object rounded to float32, bit for bit;
#   - --frames 2 then continued to 4 gives the same caches byte for byte as
#     an uninterrupted run; --force removes the cache files it wrote and
#     keeps a file of the user's in cache/;
#   - a body with "fracture" gets no cache: one message naming it, why and
#     what is written instead; summary.json lists it under "uncached"; its
#     frame OBJs are written although outputs.surface_obj is false;
#   - bad input: "pc2": "yes" is exit 2 with the JSON path.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_cache"
rm -rf "$T"; mkdir -p "$T"
R=("$DEFO" run --threads 1 --quiet)

cat > "$T/drop.json" <<EOF
{
  "name": "cache drop",
  "duration": {"fps": 24, "frames": 4},
  "bodies": [
    {"name": "ball", "generator": {"type": "sphere", "radius": 0.2, "center": [1, 0, -0.7], "cell_size": 0.1},
     "material": {"youngs": 2e4}},
    {"name": "box q", "generator": {"type": "box", "size": [0.2, 0.2, 0.2], "center": [1.6, 0, -0.75],
     "cells": [2, 2, 2], "order": 2}, "material": {"youngs": 2e4}},
    {"name": "eight", "generator": {"type": "box", "size": [0.6, 0.3, 1.1], "center": [0, 0, 0],
     "cells": [2, 1, 4]}, "material": {"youngs": 2e4},
     "embedded": {"file": "$DEFO_SRC/data/meshes/eight.off"}}
  ],
  "colliders": [{"name": "ground", "type": "plane", "point": [0, 0, -1], "normal": [0, 0, 1]}],
  "outputs": {"pc2": true, "mdd": true}
}
EOF
if "${R[@]}" "$T/drop.json" -o "$T/a" > "$T/out" 2> "$T/err"; then ok; else bad "run: $(cat "$T/err")"; fi
[ ! -s "$T/err" ] && ok || bad "a run of cacheable bodies printed: $(cat "$T/err")"

$py - "$T/a" <<'EOF' && ok || bad "caches do not match the frame OBJs"
import json, struct, sys
import numpy as np
run = sys.argv[1]
s = json.load(open(run + "/summary.json"))
caches, fps = s["outputs"]["caches"], s["fps"]
assert [c["body"] for c in caches] == ["ball", "box q", "eight"], caches
assert s["outputs"]["uncached"] == []

def obj_objects(path):
    objs, cur = {}, None
    for line in open(path):
        if line.startswith("o "):
            cur = objs.setdefault(line[2:].rstrip("\n"), [])
        elif line.startswith("v "):
            cur.append([float(t) for t in line.split()[1:4]])
    return {k: np.array(v) for k, v in objs.items()}

frames = [obj_objects("%s/surface/frame_%04d.obj" % (run, k)) for k in range(5)]
for c in caches:
    name = c["body"]
    rest = obj_objects(run + "/" + c["obj"])[name]
    n = len(rest)
    raw = open(run + "/" + c["pc2"], "rb").read()
    sig, ver, nv, start, rate, ns = struct.unpack("<12siiffi", raw[:32])
    assert (sig, ver, nv, start, rate, ns) == (b"POINTCACHE2\0", 1, n, 0.0, 1.0, 5), (sig, ver, nv, start, rate, ns)
    assert len(raw) == 32 + ns * nv * 12
    pc2 = np.frombuffer(raw[32:], "<f4").reshape(ns, nv, 3)
    raw = open(run + "/" + c["mdd"], "rb").read()
    nf, nv2 = struct.unpack(">ii", raw[:8])
    times = np.frombuffer(raw[8:8 + 4 * nf], ">f4")
    mdd = np.frombuffer(raw[8 + 4 * nf:], ">f4").reshape(nf, nv2, 3)
    assert (nf, nv2) == (5, n) and np.array_equal(times, (np.arange(5) / fps).astype("f4")), times
    for k in range(5):
        want = frames[k][name].astype("f4")
        assert want.shape == (n, 3), (name, k, want.shape, n)
        assert np.array_equal(pc2[k], want) and np.array_equal(mdd[k], want), (name, k)
    moved = np.abs(frames[4][name] - rest).max()
    assert moved > 0.01, (name, moved)  # the bodies fell: the check compares motion
    print("%s: %d vertices, 5 frames, moved %.3f m" % (name, n, moved))
EOF

# continued run == uninterrupted run, byte for byte
"${R[@]}" "$T/drop.json" -o "$T/b" --frames 2 2> "$T/err" && "${R[@]}" "$T/drop.json" -o "$T/b" 2>> "$T/err" \
  && ok || bad "interrupted run: $(cat "$T/err")"
for f in ball.pc2 ball.mdd box_q.pc2 box_q.mdd eight.pc2 eight.obj; do
  cmp -s "$T/a/cache/$f" "$T/b/cache/$f" && ok || bad "continued run: cache/$f differs"
done

# --force removes what defo wrote, keeps the user's file
echo mine > "$T/b/cache/notes.txt"
"${R[@]}" "$T/drop.json" -o "$T/b" --force --frames 1 > "$T/out" 2>&1 && ok || bad "--force: $(cat "$T/out")"
[ -f "$T/b/cache/notes.txt" ] && ok || bad "--force removed a file defo did not write"
$py -c "import struct,sys; assert struct.unpack('<i', open(sys.argv[1],'rb').read()[28:32])[0] == 2" \
  "$T/b/cache/ball.pc2" && ok || bad "--force: the new cache does not hold 2 frames"

# a fracturing body: no cache, one message, frame OBJs instead
cat > "$T/tear.json" <<EOF
{
  "duration": {"fps": 30, "frames": 2}, "gravity": [0, 0, 0],
  "integrator": {"type": "backward_euler", "time_step": 0.005, "rayleigh_mass": 1.0},
  "bodies": [
    {"name": "bar", "formulation": "corotated",
     "generator": {"type": "box", "size": [0.4, 0.1, 0.1], "center": [0.2, 0, 0.3], "cells": [12, 3, 3], "split": "5"},
     "material": {"model": "corotated", "youngs": 1e5, "poisson": 0.33, "density": 1000},
     "fracture": {"threshold": 6e3},
     "fixed": [{"box": {"min": [-0.01, -1, -1], "max": [0.001, 1, 1]}},
               {"box": {"min": [0.399, -1, -1], "max": [0.41, 1, 1]}, "motion": {"velocity": [0.5, 0, 0]}}]},
    {"name": "cube", "generator": {"type": "box", "size": [0.1, 0.1, 0.1], "center": [0, 0.5, 0.3], "cells": 1}}
  ],
  "outputs": {"pc2": true, "surface_obj": false}
}
EOF
"${R[@]}" "$T/tear.json" -o "$T/t" > "$T/out" 2> "$T/err" && ok || bad "fracture run: $(cat "$T/err")"
want="defo run: outputs.pc2: bodies[0] 'bar' has \"fracture\": its surface gains vertices and faces as it splits, and a point cache animates one fixed vertex list, so it gets no cache; its surface is in surface/frame_NNNN.obj (object 'bar', written although outputs.surface_obj is false), which tools/blender/defo_import.py loads as a frame sequence"
[ "$(cat "$T/err")" = "$want" ] && ok || bad "fracture message: $(cat "$T/err")"
[ -f "$T/t/cache/cube.pc2" ] && [ ! -e "$T/t/cache/bar.pc2" ] && ok || bad "fracture: caches $(ls "$T/t/cache")"
[ -f "$T/t/surface/frame_0002.obj" ] && ok || bad "fracture: no frame OBJs"
$py -c "import json,sys; o = json.load(open(sys.argv[1]))['outputs']; assert o['uncached'] == ['bar'] and o['surface'] == 'surface/frame_NNNN.obj'" \
  "$T/t/summary.json" && ok || bad "summary.json: uncached"

# bad input
printf '{"bodies": [{"generator": {"type": "box"}}], "outputs": {"pc2": "yes"}}' > "$T/bad.json"
"$DEFO" validate "$T/bad.json" > "$T/out" 2> "$T/err"; rc=$?
[ "$rc" = 2 ] && grep -qF "$T/bad.json: outputs.pc2: expected true or false" "$T/err" && ok \
  || bad "\"pc2\": \"yes\": exit $rc: $(cat "$T/err")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
