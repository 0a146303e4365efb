#!/usr/bin/env bash
# CLI contract for `defo info` and `defo convert`: JSON keys scripts rely on,
# round trips through every writable format keep the counts and the volume,
# and every error path exits 2 with a one-line reason naming the file.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_info_convert"
rm -rf "$T"; mkdir -p "$T"

# A generated mesh to work on (the demo writes torus.vtu/.msh/.obj).
"$DEFO" demo -o "$T/demo" > "$T/demo.log" 2>&1 || bad "defo demo failed: $(cat "$T/demo.log")"
[ -s "$T/demo/torus.vtu" ] && ok || bad "demo wrote no torus.vtu"

# info --json: one object with the contract keys.
"$DEFO" info "$T/demo/torus.vtu" --json > "$T/info.json" || bad "info --json exit $?"
$py - "$T/info.json" <<'PY' && ok || bad "info --json keys"
import json, sys
d = json.load(open(sys.argv[1]))
need = ["nodes", "elements", "order", "volume", "bbox_min", "bbox_max", "inverted",
        "min_dihedral_deg", "max_dihedral_deg", "boundary_faces", "components"]
missing = [k for k in need if k not in d]
assert not missing, missing
assert d["order"] == 1 and d["elements"] > 1000 and d["components"] == 1 and d["inverted"] == 0
# analytic torus volume 2 pi^2 R r^2 with R = 1, r = 0.4: within 5 %
import math
v = 2 * math.pi**2 * 1.0 * 0.4**2
assert abs(d["volume"] - v) / v < 0.05, (d["volume"], v)
assert 0 < d["min_dihedral_deg"] < d["max_dihedral_deg"] < 180
PY

# convert round trips: each format keeps nodes, elements and volume.
ref_nodes=$($py -c "import json;print(json.load(open('$T/info.json'))['nodes'])")
ref_elems=$($py -c "import json;print(json.load(open('$T/info.json'))['elements'])")
for out in t.msh t2.msh t.vtk t_ascii.vtu t.node; do
  extra=""
  [ "$out" = t2.msh ] && extra="--msh-version 2 --ascii"
  [ "$out" = t_ascii.vtu ] && extra="--ascii"
  if "$DEFO" convert "$T/demo/torus.vtu" "$T/$out" $extra > /dev/null; then
    "$DEFO" info "$T/$out" --json > "$T/$out.json" || { bad "info $out"; continue; }
    $py -c "
import json; d = json.load(open('$T/$out.json')); r = json.load(open('$T/info.json'))
assert d['nodes'] == $ref_nodes and d['elements'] == $ref_elems, d
assert abs(d['volume'] - r['volume']) <= 1e-12 * r['volume'], (d['volume'], r['volume'])
" && ok || bad "round trip through $out changed the mesh"
  else
    bad "convert to $out"
  fi
done

# Bad input: exit 2, one line on stderr naming the problem.
expect_bad() { # description, expected substring, command...
  local what=$1 needle=$2; shift 2
  "$@" > "$T/out.txt" 2> "$T/err.txt"; local rc=$?
  local lines; lines=$(wc -l < "$T/err.txt")
  if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$needle" "$T/err.txt"; then ok
  else bad "$what: rc=$rc lines=$lines stderr=$(cat "$T/err.txt")"; fi
}
expect_bad "missing file" "nope.vtu" "$DEFO" info "$T/nope.vtu"
expect_bad "no argument" "missing MESH" "$DEFO" info
expect_bad "unknown option" "--frob" "$DEFO" info --frob x.vtu
expect_bad "unknown command" "frobnicate" "$DEFO" frobnicate
expect_bad "unknown output format" "t.xyz" "$DEFO" convert "$T/demo/torus.vtu" "$T/t.xyz"
expect_bad "bad msh version" "--msh-version" "$DEFO" convert "$T/demo/torus.vtu" "$T/x.msh" --msh-version 3
printf 'garbage\n' > "$T/garbage.msh"
expect_bad "garbage msh" "garbage.msh:" "$DEFO" info "$T/garbage.msh"
# A failed conversion leaves no output file behind.
"$DEFO" convert "$T/garbage.msh" "$T/never.vtu" 2>/dev/null
[ ! -e "$T/never.vtu" ] && ok || bad "failed convert left a file"
ls "$T" | grep -q 'tmp-' && bad "temporary file left behind" || ok


# Elements stored inside out or flat are counted by info and kept by convert
# (a frame of a simulation is data to inspect): exit 0, the counts and the
# first element of each reported, the converted file still holds them.
cat > "$T/inv.node" <<'N'
5 3 0 0
0 0 0 0
1 1 0 0
2 0 1 0
3 0 0 1
4 1 1 1
N
cat > "$T/inv.ele" <<'N'
2 4 0
0 0 1 2 3
1 1 2 4 3
N
"$DEFO" info "$T/inv.node" --json > "$T/inv.json" && \
  $py -c "import json; d = json.load(open('$T/inv.json')); assert d['inverted'] == 1 and d['first_inverted'] == 1 and d['flat'] == 0 and d['elements'] == 2, d" \
  && ok || bad "info does not count the inverted element"
"$DEFO" convert "$T/inv.node" "$T/inv.vtu" > /dev/null 2> "$T/inv.err" && grep -q "kept as stored: 1 inverted element, 0 flat" "$T/inv.err" \
  && ok || bad "convert does not report the inverted element: $(cat "$T/inv.err")"
"$DEFO" info "$T/inv.vtu" --json | $py -c "import json,sys; assert json.load(sys.stdin)['inverted'] == 1" \
  && ok || bad "converted mesh lost its inverted element"
cat > "$T/flat.ele" <<'N'
2 4 0
0 0 1 2 3
1 0 1 2 4
N
cat > "$T/flat.node" <<'N'
5 3 0 0
0 0 0 0
1 1 0 0
2 0 1 0
3 1 1 0
4 0 0 1
N
"$DEFO" info "$T/flat.node" --json > "$T/flat.json" 2> "$T/flat.err" && \
  $py -c "import json; d = json.load(open('$T/flat.json')); assert d['flat'] == 1 and d['first_flat'] == 0 and d['inverted'] == 0, d" \
  && ok || bad "info of a mesh with a flat element: $(cat "$T/flat.err")"
"$DEFO" info "$T/flat.node" | grep -q "flat: 1 element with zero volume (first: element 0" \
  && ok || bad "human info does not name the flat element"
"$DEFO" convert "$T/flat.node" "$T/flat.vtu" > /dev/null 2> "$T/flat_c.err" && grep -q "0 inverted elements, 1 flat element (first: 0)" "$T/flat_c.err" \
  && ok || bad "convert of a flat element: $(cat "$T/flat_c.err")"
# a frame written by defo run with a squashed (flat) element reads back the same
$py - "$T/flat.vtu" <<'PY' && ok || bad "meshio reads the converted flat mesh"
import meshio, sys
m = meshio.read(sys.argv[1])
assert len(m.points) == 5 and len(m.cells[0].data) == 2
PY
# where a rest mesh is built for a simulation, the flat element is refused
cat > "$T/flat_scene.json" <<J
{"bodies": [{"mesh": "$T/flat.node"}], "duration": {"frames": 1}, "outputs": {"png": false}}
J
"$DEFO" run "$T/flat_scene.json" -o "$T/flat_run" > /dev/null 2> "$T/flat_run.err"; rc=$?
[ $rc = 2 ] && grep -q "element 0" "$T/flat_run.err" && ok || bad "run of a flat rest mesh: rc=$rc $(cat "$T/flat_run.err")"

# tet10: the curved volume is exact (a gmsh sphere of radius 1 at order 2:
# within 0.1 % of 4 pi / 3, where its straight-sided corners lose > 5 %), and
# the Jacobian quality of every element is summarised; an element whose edge
# node sits at 0.9 of its edge folds (det J < 0 at that corner): worst <= 0.
"$DEFO" info "$DEFO_SRC/data/gmsh/sphere_o2_msh22_bin.msh" --json > "$T/s2.json" || bad "info tet10 sphere"
$py - "$T/s2.json" <<'PY' && ok || bad "info tet10 volume / Jacobian quality"
import json, sys, math
d = json.load(open(sys.argv[1]))
v = 4 * math.pi / 3
assert d["order"] == 2 and abs(d["volume"] - v) < 1e-3 * v, d["volume"]
assert d["straight_volume"] < 0.95 * v, d["straight_volume"]
jq = d["jacobian_quality"]
assert 0.5 < jq["worst"] <= 1 and 0 <= jq["worst_element"] < d["elements"], jq
assert sum(jq["histogram"]) == d["elements"] and jq["histogram"][0] == 0, jq
PY
cat > "$T/fold.node" <<'N'
10 3 0 0
0 0 0 0
1 1 0 0
2 0 1 0
3 0 0 1
4 0.5 0.5 0
5 0 0.5 0.5
6 0 0 0.5
7 0.9 0 0
8 0.5 0 0.5
9 0 0.5 0
N
# TetGen order: edges (2,3) (0,3) (0,1) (1,2) (1,3) (0,2) -> nodes 5 6 7 4 8 9
cat > "$T/fold.ele" <<'N'
1 10 0
0 0 1 2 3 5 6 7 4 8 9
N
"$DEFO" info "$T/fold.node" --json > "$T/fold.json" || bad "info of a folded tet10"
$py -c "
import json; d = json.load(open('$T/fold.json')); jq = d['jacobian_quality']
assert jq['worst'] <= 0 and jq['worst_element'] == 0 and jq['histogram'][0] == 1, jq
" && ok || bad "folded tet10 not reported"
"$DEFO" info "$T/fold.node" > "$T/fold.txt" && grep -q "worst -[0-9.]* (element 0)" "$T/fold.txt" \
  && ok || bad "human report of a folded tet10: $(cat "$T/fold.txt")"

# convert to .obj reports the surface it wrote (vertices and triangles of the
# boundary, read back from the file and counted by meshio), not the volume
# mesh's counts; a tet10 boundary has 4 triangles per curved face.
for src in "$T/demo/torus.vtu" "$DEFO_SRC/data/gmsh/sphere_o2_msh22_bin.msh"; do
  "$DEFO" convert "$src" "$T/surf.obj" > "$T/obj.out" 2>&1 || bad "convert to obj: $(cat "$T/obj.out")"
  $py - "$T/surf.obj" "$T/obj.out" "$src" <<'PY' && ok || bad "convert .obj report: $(cat "$T/obj.out")"
import meshio, re, sys
m = meshio.read(sys.argv[1])
tris = sum(len(c.data) for c in m.cells if c.type == "triangle")
used = len(set(int(v) for c in m.cells for v in c.data.ravel()))
msg = open(sys.argv[2]).read()
got = re.search(r"(\d+) vertices, (\d+) triangles", msg)
assert got and int(got.group(1)) == len(m.points) == used and int(got.group(2)) == tris, (msg, len(m.points), tris)
v = meshio.read(sys.argv[3])
faces = 0
if sys.argv[3].endswith(".msh"):   # gmsh wrote the boundary triangles (triangle6)
    faces = sum(len(c.data) for c in v.cells if c.type == "triangle6")
    assert tris == 4 * faces, (tris, faces)
PY
done

# Compressed .vtu: meshio writes zlib by default, defo reads it; defo writes it
# with --compress (meshio reads the same points and cells); --compress needs
# a binary .vtu.
$py - "$T/demo/torus.vtu" "$T/mio_zlib.vtu" <<'PY' || bad "meshio could not write a zlib .vtu"
import meshio, sys
m = meshio.read(sys.argv[1])
meshio.write(sys.argv[2], m)  # binary, zlib: meshio's defaults
PY
"$DEFO" info "$T/mio_zlib.vtu" --json > "$T/mz.json" 2> "$T/mz.err" && \
  $py -c "
import json; d = json.load(open('$T/mz.json')); r = json.load(open('$T/info.json'))
assert d['nodes'] == r['nodes'] and d['elements'] == r['elements'] and d['volume'] == r['volume'], d
" && ok || bad "info of meshio's zlib .vtu: $(cat "$T/mz.err")"
"$DEFO" convert "$T/demo/torus.vtu" "$T/z.vtu" --compress > /dev/null || bad "convert --compress"
grep -q 'compressor="vtkZLibDataCompressor"' "$T/z.vtu" && ok || bad "--compress wrote no zlib .vtu"
$py - "$T/demo/torus.vtu" "$T/z.vtu" <<'PY' && ok || bad "meshio reads defo's zlib .vtu differently"
import meshio, sys, numpy as np
a, b = meshio.read(sys.argv[1]), meshio.read(sys.argv[2])
assert np.array_equal(a.points, b.points)
assert all(np.array_equal(x.data, y.data) for x, y in zip(a.cells, b.cells))
PY
[ "$(stat -c %s "$T/z.vtu")" -lt "$(stat -c %s "$T/demo/torus.vtu")" ] && ok || bad "zlib .vtu not smaller"
expect_bad "--compress ascii" "--compress and --ascii" "$DEFO" convert "$T/demo/torus.vtu" "$T/za.vtu" --compress --ascii
expect_bad "--compress msh" "--compress writes .vtu only" "$DEFO" convert "$T/demo/torus.vtu" "$T/z.msh" --compress

# Human-readable info mentions the counts.
"$DEFO" info "$T/demo/torus.vtu" > "$T/info.txt" && grep -q "tet4 elements" "$T/info.txt" && ok || bad "human info"
"$DEFO" --version | grep -q '^defo [0-9]' && ok || bad "--version"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
