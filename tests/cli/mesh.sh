#!/usr/bin/env bash
# CLI contract for `defo mesh`: a tet mesh from the real bunny surface in
# every output format (read back by `defo info` and by meshio), the --json
# keys, tet10, a warning (exit 0) for a surface with a hole, and every error
# path exiting 2 with a one-line reason.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_mesh"
rm -rf "$T"; mkdir -p "$T"
bunny="$DEFO_SRC/data/meshes/bunny.off"
eight="$DEFO_SRC/data/meshes/eight.off"

# Success, human report.
"$DEFO" mesh "$bunny" -o "$T/bunny.vtu" --cells 12 > "$T/h.txt" 2> "$T/h.err" \
  && ok || bad "mesh bunny: $(cat "$T/h.err")"
[ -s "$T/bunny.vtu" ] && ok || bad "no bunny.vtu written"
grep -q "min dihedral" "$T/h.txt" && grep -q "histogram" "$T/h.txt" \
  && grep -q "before optimisation" "$T/h.txt" && ok || bad "human report: $(cat "$T/h.txt")"
[ ! -s "$T/h.err" ] && ok || bad "closed surface warned: $(cat "$T/h.err")"

# --json keys; the written file agrees with the report (defo info, meshio).
"$DEFO" mesh "$bunny" -o "$T/bunny.msh" --cells 12 --json > "$T/m.json" 2> "$T/m.err" || bad "mesh --json exit $?"
"$DEFO" info "$T/bunny.msh" --json > "$T/i.json" || bad "info of the written mesh"
$py - "$T/m.json" "$T/i.json" "$T/bunny.vtu" <<'PY' && ok || bad "mesh --json keys/values"
import json, sys
d = json.load(open(sys.argv[1])); i = json.load(open(sys.argv[2]))
need = ["nodes", "elements", "order", "volume", "surface_volume", "volume_error",
        "min_dihedral_deg", "max_dihedral_deg", "inverted", "max_boundary_distance", "h", "seconds"]
missing = [k for k in need if k not in d]
assert not missing, missing
assert d["order"] == 1 and d["inverted"] == 0 and d["min_dihedral_deg"] >= 20, d["min_dihedral_deg"]
# the quality before the optimisation, and the histogram of the output
assert d["min_dihedral_deg_snapped"] >= 10 and d["optimize_sweeps"] >= 1
assert sum(d["min_dihedral_histogram"]) == d["elements"] and sum(d["min_dihedral_histogram"][:2]) == 0
assert abs(d["volume_error"]) <= 0.03, d["volume_error"]
assert d["max_boundary_distance"] <= 0.5 * d["h"]
assert abs(d["volume"] - d["surface_volume"] * (1 + d["volume_error"])) <= 1e-9 * d["volume"]
assert i["nodes"] == d["nodes"] and i["elements"] == d["elements"] and i["inverted"] == 0
assert abs(i["volume"] - d["volume"]) <= 1e-9 * d["volume"], (i["volume"], d["volume"])
try:
    import meshio
    m = meshio.read(sys.argv[3])
    assert len(m.points) == d["nodes"] and sum(len(c.data) for c in m.cells) == d["elements"]
except ImportError:
    pass
PY

# Deterministic: two runs write identical files.
"$DEFO" mesh "$bunny" -o "$T/again.msh" --cells 12 > /dev/null 2>&1
cmp -s "$T/bunny.msh" "$T/again.msh" && ok || bad "two runs differ"

# tet10 via --size, TetGen output.
"$DEFO" mesh "$eight" -o "$T/eight.node" --size 0.06 --order 2 --json > "$T/e.json" 2> "$T/e.err" \
  && ok || bad "tet10 eight: $(cat "$T/e.err")"
$py -c "
import json; d = json.load(open('$T/e.json'))
assert d['order'] == 2 and d['inverted'] == 0 and abs(d['h'] - 0.06) < 1e-12, d
" && ok || bad "tet10 json"
[ -s "$T/eight.node" ] && [ -s "$T/eight.ele" ] && ok || bad "no .node/.ele written"
# ... and it is a valid tet10 mesh: every element's Jacobian quality (defo
# info, defo_element_jacobian_quality) is positive, the curved volume is what
# defo mesh reported, and the bunny meshed at order 2 too; meshio reads the
# .vtu as tetra10 cells.
"$DEFO" info "$T/eight.node" --json > "$T/e_info.json" || bad "info of the tet10 eight"
"$DEFO" mesh "$bunny" -o "$T/bunny2.vtu" --cells 12 --order 2 > /dev/null 2> "$T/b2.err" \
  || bad "tet10 bunny: $(cat "$T/b2.err")"
"$DEFO" info "$T/bunny2.vtu" --json > "$T/b2_info.json" || bad "info of the tet10 bunny"
$py - "$T/e.json" "$T/e_info.json" "$T/b2_info.json" "$T/bunny2.vtu" <<'PY' && ok || bad "tet10 from defo mesh is not valid"
import json, sys
d, i, b = (json.load(open(p)) for p in sys.argv[1:4])
for info in (i, b):
    assert info["order"] == 2, info["order"]
    jq = info["jacobian_quality"]
    assert jq["worst"] > 0, jq
    assert sum(jq["histogram"]) == info["elements"] and jq["histogram"][0] == 0, jq
assert i["nodes"] == d["nodes"] and i["elements"] == d["elements"]
assert abs(i["volume"] - d["volume"]) <= 1e-9 * d["volume"], (i["volume"], d["volume"])
import meshio
m = meshio.read(sys.argv[4])
assert [c.type for c in m.cells] == ["tetra10"], [c.type for c in m.cells]
assert len(m.cells[0].data) == b["elements"]
PY
# ... and its OBJ is the curved boundary: 4 flat triangles per 6-node face
"$DEFO" convert "$T/bunny2.vtu" "$T/bunny2.obj" > "$T/b2obj.out" 2>&1 || bad "convert tet10 .vtu to .obj"
faces=$($py -c "import json; print(json.load(open('$T/b2_info.json'))['boundary_faces'])")
grep -q "vertices, $((4 * faces)) triangles (the boundary of the volume mesh)" "$T/b2obj.out" \
  && ok || bad "tet10 .obj: $(cat "$T/b2obj.out"), $faces boundary faces"

# A surface with a small hole: mesh anyway, one warning line, exit 0.
$py - "$eight" "$T/holed.off" <<'PY'
import sys
lines = open(sys.argv[1]).read().split('\n')
hdr = [l for l in lines if l.strip() and not l.startswith('#')]
nv, nf = map(int, hdr[1].split()[:2])
body = hdr[2:2 + nv] + hdr[2 + nv + 1:2 + nv + nf]  # drop the first face
open(sys.argv[2], 'w').write('OFF\n%d %d 0\n' % (nv, nf - 1) + '\n'.join(body) + '\n')
PY
"$DEFO" mesh "$T/holed.off" -o "$T/holed.vtu" --cells 20 > /dev/null 2> "$T/w.err"; rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l < "$T/w.err")" -eq 1 ] && grep -q "warning:.*open" "$T/w.err" && [ -s "$T/holed.vtu" ]; then ok
else bad "holed surface: rc=$rc $(cat "$T/w.err")"; fi

# Bad input: exit 2, one line on stderr naming the problem.
expect_bad() { # description, expected substring, command...
  local what=$1 needle=$2; shift 2
  "$@" > "$T/out.txt" 2> "$T/err.txt"; local rc=$?
  local lines; lines=$(wc -l < "$T/err.txt")
  if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$needle" "$T/err.txt"; then ok
  else bad "$what: rc=$rc lines=$lines stderr=$(cat "$T/err.txt")"; fi
}
printf 'OFF\n0 0 0\n' > "$T/empty.off"
printf 'OFF\n3 1 0\n0 0 0\n1 nan 0\n0 1 0\n3 0 1 2\n' > "$T/nan.off"
# a single triangle encloses nothing
printf 'OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n' > "$T/tri.off"
# an open cap: 4 triangles of an octahedron (the upper half) encloses nothing
printf 'OFF\n5 4 0\n1 0 0\n0 1 0\n-1 0 0\n0 -1 0\n0 0 1\n3 0 1 4\n3 1 2 4\n3 2 3 4\n3 3 0 4\n' > "$T/cap.off"
expect_bad "no arguments"      "missing SURFACE"  "$DEFO" mesh
expect_bad "no output"         "missing -o"       "$DEFO" mesh "$bunny"
expect_bad "bad extension"     "must end in"      "$DEFO" mesh "$bunny" -o "$T/x.obj"
expect_bad "bad cells"         "--cells"          "$DEFO" mesh "$bunny" -o "$T/x.vtu" --cells 0
expect_bad "cells not number"  "--cells"          "$DEFO" mesh "$bunny" -o "$T/x.vtu" --cells abc
expect_bad "bad size"          "--size"           "$DEFO" mesh "$bunny" -o "$T/x.vtu" --size -1
expect_bad "cells and size"    "not both"         "$DEFO" mesh "$bunny" -o "$T/x.vtu" --cells 5 --size 1
expect_bad "bad order"         "--order"          "$DEFO" mesh "$bunny" -o "$T/x.vtu" --order 3
expect_bad "unknown option"    "unknown option"   "$DEFO" mesh "$bunny" -o "$T/x.vtu" --frobnicate
expect_bad "two inputs"        "unexpected"       "$DEFO" mesh "$bunny" "$eight" -o "$T/x.vtu"
expect_bad "missing file"      "missing.off"      "$DEFO" mesh "$T/missing.off" -o "$T/x.vtu"
expect_bad "empty surface"     "empty.off"        "$DEFO" mesh "$T/empty.off" -o "$T/x.vtu"
expect_bad "non-finite"        "nan.off"          "$DEFO" mesh "$T/nan.off" -o "$T/x.vtu"
expect_bad "flat surface"      "flat"             "$DEFO" mesh "$T/tri.off" -o "$T/x.vtu"
expect_bad "open cap"          "nothing inside"   "$DEFO" mesh "$T/cap.off" -o "$T/x.vtu" --cells 8
expect_bad "volume mesh input" "not a surface"    "$DEFO" mesh "$T/bunny.vtu" -o "$T/x.vtu"
expect_bad "lattice too large" "too many"         "$DEFO" mesh "$bunny" -o "$T/x.vtu" --size 1e-6
[ ! -e "$T/x.vtu" ] && ok || bad "a failed run left an output file"

echo "cli_mesh: $pass passed, $fail failed"
[ $fail -eq 0 ]
