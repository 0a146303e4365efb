#!/usr/bin/env bash
# CLI contract for contact in scenes: a soft ball dropped on a deformable slab
# rests on it (and falls through it to the ground with "collide": false); a
# mesh collider holds a ball as the analytic box of the same shape does; the
# errors of mesh colliders and of the "contact" object name their JSON paths;
# two bodies that start inside each other are reported before the first
# frame.  Positions are read back by meshio (an independent reader).
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
T="$DEFO_TMP/cli_contact"
rm -rf "$T"; mkdir -p "$T"
py=/usr/bin/python3
R=("$DEFO" run --threads 1 --quiet)

# lowest z of body NAME in the last frame of run folder DIR
lowest() {
  $py - "$1" "$2" <<'PY'
import sys, os, glob, meshio, numpy as np
d, name = sys.argv[1], sys.argv[2]
f = sorted(glob.glob(os.path.join(d, "frames", "frame_*.vtu")))[-1]
m = meshio.read(f)
ids = np.asarray(m.cell_data["body_id"][0]).ravel().astype(int)
import json
names = [b["name"] for b in json.load(open(os.path.join(d, "summary.json")))["final"]["bodies"]]
k = names.index(name)
cells = m.cells[0].data[ids == k]
print("%.6f" % m.points[np.unique(cells)][:, 2].min())
PY
}

# 1. a soft ball on a soft slab lying on the ground
slab_scene() { # $1: the ball's "collide"
cat <<JSON
{"name": "ball on slab", "duration": {"frames": 16, "fps": 30},
 "integrator": {"type": "newmark", "max_dt": 0.004},
 "bodies": [
  {"name": "slab", "generator": {"type": "box", "center": [0, 0, 0.05], "size": [0.6, 0.6, 0.1], "cells": [4, 4, 1]},
   "material": {"youngs": 2e4, "poisson": 0.3, "density": 1000, "damping": 0.02}},
  {"name": "ball", "collide": $1, "generator": {"type": "sphere", "center": [0, 0, 0.28], "radius": 0.1, "cell_size": 0.05},
   "material": {"youngs": 2e4, "poisson": 0.3, "density": 1000, "damping": 0.02}}],
 "colliders": [{"name": "ground", "type": "plane"}],
 "outputs": {"fields": ["displacement", "body_id", "contact"]}}
JSON
}
slab_scene true > "$T/slab.json"
slab_scene false > "$T/through.json"
"${R[@]}" "$T/slab.json" -o "$T/slab" 2> "$T/slab.err" && ok || bad "ball on slab: $(cat "$T/slab.err")"
"${R[@]}" "$T/through.json" -o "$T/through" 2> "$T/through.err" && ok || bad "collide false: $(cat "$T/through.err")"
zs=$(lowest "$T/slab" ball); zt=$(lowest "$T/through" ball); top=$(lowest "$T/slab" slab)
echo "  ball's lowest node: $zs m on the slab (slab top 0.1), $zt m with collide false"
awk -v z="$zs" 'BEGIN { exit !(z > 0.095 && z < 0.13) }' && ok || bad "ball not resting on the slab: $zs"
awk -v z="$zt" 'BEGIN { exit !(z < 0.01) }' && ok || bad "collide false: ball did not fall through ($zt)"
grep -q '"contacts"' "$T/slab/stats.jsonl" && ok || bad "stats.jsonl without contacts"
$py - "$T/slab/stats.jsonl" <<'PY' && ok || bad "no contact pairs counted on the slab"
import sys, json
print("  contact pairs at most:", max(json.loads(l)["contacts"] for l in open(sys.argv[1])))
assert max(json.loads(l)["contacts"] for l in open(sys.argv[1])) > 0
import os
pc = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "summary.json")))["peak_contact"]
assert pc["pairs"] == max(json.loads(l)["contacts"] for l in open(sys.argv[1])), pc
assert pc["depth"] == max(json.loads(l)["contact_depth"] for l in open(sys.argv[1])), pc
PY
# the contact point field: nothing touches in frame 1 (the ball 0.08 m up);
# at rest both bodies have touching nodes, the ball's at its bottom (within
# 1 cm of its lowest node) and the slab's on its top face; with collide
# false nothing ever touches
$py - "$T/slab" "$T/through" <<'PY' && ok || bad "contact field does not mark where the ball rests"
import sys, os, meshio, numpy as np
def frame(d, k):
    m = meshio.read(os.path.join(d, "frames", "frame_%04d.vtu" % k))
    ids = np.asarray(m.cell_data["body_id"][0]).ravel().astype(int)
    return m, np.asarray(m.point_data["contact"]).ravel(), ids
m, c, ids = frame(sys.argv[1], 1)
assert c.max() == 0, "touching in frame 1"
m, c, ids = frame(sys.argv[1], 16)
slab, ball = (np.unique(m.cells[0].data[ids == k]) for k in (0, 1))
cs, cb = slab[c[slab] > 0], ball[c[ball] > 0]
print("  touching nodes at rest: slab %d of %d, ball %d of %d" % (len(cs), len(slab), len(cb), len(ball)))
assert len(cs) > 0 and len(cb) > 0
assert m.points[cb, 2].max() < m.points[ball, 2].min() + 0.01, m.points[cb, 2]
assert m.points[cs, 2].min() > 0.09, m.points[cs, 2]
for k in range(1, 17):
    assert frame(sys.argv[2], k)[1].max() == 0, "collide false touches in frame %d" % k
PY

# 2. a mesh collider (a box written as an OBJ) against the analytic box
cat > "$T/table.obj" <<'OBJ'
v -0.4 -0.4 0
v 0.4 -0.4 0
v 0.4 0.4 0
v -0.4 0.4 0
v -0.4 -0.4 0.2
v 0.4 -0.4 0.2
v 0.4 0.4 0.2
v -0.4 0.4 0.2
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 2 3 7
f 2 7 6
f 3 4 8
f 3 8 7
f 4 1 5
f 4 5 8
OBJ
table_scene() { # $1: the collider's shape
cat <<JSON
{"name": "ball on a table", "duration": {"frames": 15, "fps": 30},
 "integrator": {"type": "newmark", "max_dt": 0.004},
 "bodies": [{"name": "ball", "generator": {"type": "sphere", "center": [0.05, 0, 0.35], "radius": 0.1, "cell_size": 0.05},
   "material": {"youngs": 2e4, "poisson": 0.3, "density": 1000, "damping": 0.02}}],
 "colliders": [$1],
 "outputs": {"fields": ["displacement", "body_id", "contact"]}}
JSON
}
table_scene '{"name": "table", "type": "mesh", "file": "table.obj", "center": [0, 0, -0.1], "scale": [1, 1, 1]}' > "$T/mesh.json"
table_scene '{"name": "table", "type": "box", "center": [0, 0, 0], "half_extents": [0.4, 0.4, 0.1]}' > "$T/box.json"
"${R[@]}" "$T/mesh.json" -o "$T/mesh" 2> "$T/mesh.err" && ok || bad "mesh collider run: $(cat "$T/mesh.err")"
"${R[@]}" "$T/box.json" -o "$T/box" 2> "$T/box.err" && ok || bad "box collider run: $(cat "$T/box.err")"
zm=$(lowest "$T/mesh" ball); zb=$(lowest "$T/box" ball)
echo "  ball's lowest node: $zm m on the mesh table, $zb m on the analytic box (top at 0.1)"
awk -v a="$zm" -v b="$zb" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-6 && a > 0.099 && a < 0.11) }' \
  && ok || bad "mesh table $zm vs box $zb"
grep -q "warning" "$T/mesh.err" && bad "a closed mesh warned: $(cat "$T/mesh.err")" || ok

# 3. mesh collider errors, each naming its path
head -18 "$T/table.obj" > "$T/open.obj"   # two faces short: a hole of the box's side
table_scene '{"type": "mesh", "file": "open.obj"}' > "$T/open.json"
"${R[@]}" "$T/open.json" -o "$T/open" 2> "$T/open.err"; rc=$?
[ $rc != 0 ] && grep -q "colliders\[0\].*the mesh is not closed" "$T/open.err" && ok || bad "open mesh (rc $rc): $(cat "$T/open.err")"
table_scene '{"type": "mesh"}' > "$T/nofile.json"
"$DEFO" validate "$T/nofile.json" > /dev/null 2> "$T/nofile.err"
grep -q "colliders\[0\].file: missing" "$T/nofile.err" && ok || bad "mesh without file: $(cat "$T/nofile.err")"
table_scene '{"type": "sphere", "file": "table.obj"}' > "$T/spherefile.json"
"$DEFO" validate "$T/spherefile.json" > /dev/null 2> "$T/spherefile.err"
grep -qF 'colliders[0].file: only a mesh collider takes "file"' "$T/spherefile.err" && ok || bad "file on a sphere: $(cat "$T/spherefile.err")"
table_scene '{"type": "mesh", "file": "nowhere.obj"}' > "$T/missing.json"
"$DEFO" validate "$T/missing.json" > /dev/null 2> "$T/missing.err"
grep -q "colliders\[0\].file: .*nowhere.obj" "$T/missing.err" && ok || bad "missing mesh file: $(cat "$T/missing.err")"
table_scene '{"type": "mesh", "file": "table.obj", "scale": -1}' > "$T/scale.json"
"$DEFO" validate "$T/scale.json" > /dev/null 2> "$T/scale.err"
grep -q "colliders\[0\].scale: -1 is not > 0" "$T/scale.err" && ok || bad "negative scale: $(cat "$T/scale.err")"

# 4. the contact object
sed 's/"bodies"/"contact": {"thickness": 2, "sweep": 3, "separation_speed": 0}, "bodies"/' "$T/slab.json" > "$T/keys.json"
"$DEFO" validate "$T/keys.json" > /dev/null 2> "$T/keys.err"
grep -qF "contact.thickness: 2 is not in (0, 1]" "$T/keys.err" && ok || bad "thickness range: $(cat "$T/keys.err")"
grep -qF "contact.sweep: unknown key (did you mean 'sweeps'?)" "$T/keys.err" && ok || bad "key suggestion: $(cat "$T/keys.err")"
grep -qF "contact.separation_speed: 0 is not > 0" "$T/keys.err" && ok || bad "separation speed: $(cat "$T/keys.err")"

# 5. two bodies that start inside each other: reported, then pushed apart
sed 's/"center": \[0, 0, 0.28\]/"center": [0, 0, 0.15]/' "$T/slab.json" | sed 's/"frames": 16/"frames": 3/' > "$T/overlap.json"
"${R[@]}" "$T/overlap.json" -o "$T/overlap" 2> "$T/overlap.err" && ok || bad "overlap run failed: $(cat "$T/overlap.err")"
grep -q "warning: .*starts inside bodies\[1\] .ball.*pushed apart" "$T/overlap.err" && ok || bad "overlap not reported: $(cat "$T/overlap.err")"

echo "cli_contact: $pass passed, $fail failed"
[ "$fail" = 0 ]
