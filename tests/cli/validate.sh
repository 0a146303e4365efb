#!/usr/bin/env bash
# CLI contract for `defo validate SCENE.json`: exit 0 and one "ok" line for
# every example scene; for a bad scene exit 2 with EVERY error on its own
# line "FILE: json.path: reason" (range messages, key suggestions, missing
# files, reserved names); JSON syntax errors with line:column; usage errors.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
T="$DEFO_TMP/cli_validate"
rm -rf "$T"; mkdir -p "$T"

# expect CODE CMD...: run, keep stdout/stderr in $T/out $T/err
expect() {
  local want=$1; shift
  "$@" > "$T/out" 2> "$T/err"; local got=$?
  [ "$got" = "$want" ] && ok || bad "'$*' exit $got (want $want): $(head -3 "$T/err")"
}

# 1. every example scene is valid
for s in "$DEFO_SRC"/examples/scenes/*.json; do
  expect 0 "$DEFO" validate "$s"
  grep -q ": ok: " "$T/out" && ok || bad "no ok line for $s"
done

# 2. many errors at once, each on one line with its path
cat > "$T/bad.json" <<'JSON'
{
  "bodies": [
    {"generator": {"type": "box"}},
    {"generator": {"type": "sphere", "radius": -1},
     "material": {"poisson": 0.52, "youngs": 1e5, "densty": 1000}},
    {"mesh": "missing_mesh.vtu", "formulation": "quadratic"}
  ],
  "colliders": [{"type": "spere", "radius": 1}],
  "integrator": {"type": "hybird"}
}
JSON
expect 2 "$DEFO" validate "$T/bad.json"
n=$(wc -l < "$T/err")
[ "$n" = 7 ] && ok || bad "bad.json: $n error lines, want 7: $(cat "$T/err")"
grep -qxF "$T/bad.json: bodies[1].material.poisson: 0.52 is not in [0, 0.5)" "$T/err" && ok || bad "poisson line: $(cat "$T/err")"
grep -qxF "$T/bad.json: bodies[1].material.densty: unknown key (did you mean 'density'?)" "$T/err" && ok || bad "densty suggestion"
grep -qxF "$T/bad.json: bodies[1].generator.radius: -1 is not > 0" "$T/err" && ok || bad "radius line"
grep -q "^$T/bad.json: bodies\[2\].mesh: file '.*missing_mesh.vtu' does not exist" "$T/err" && ok || bad "missing file not named"
grep -qF "$T/bad.json: bodies[2].formulation: 'quadratic' is not a formulation: quadratic tetrahedra (tet10) come from the mesh" "$T/err" && ok || bad "quadratic formulation: $(cat "$T/err")"
grep -qxF "$T/bad.json: colliders[0].type: unknown value 'spere' (did you mean 'sphere'?)" "$T/err" && ok || bad "shape suggestion"
grep -qxF "$T/bad.json: integrator.type: unknown value 'hybird' (did you mean 'hybrid'?)" "$T/err" && ok || bad "integrator suggestion: $(cat "$T/err")"

# 3. JSON syntax error: line:column from jansson
printf '{\n  "bodies": [\n    {"generator": {"type": "box"}}\n  ]\n  "gravity": [0, 0, -9.81]\n}\n' > "$T/syntax.json"
expect 2 "$DEFO" validate "$T/syntax.json"
[ "$(wc -l < "$T/err")" = 1 ] && ok || bad "syntax error is not one line"
grep -q "^$T/syntax.json:5:[0-9]*: " "$T/err" && ok || bad "syntax error without line 5:col: $(cat "$T/err")"

# 4. usage and file errors: exit 2, one line
expect 2 "$DEFO" validate
[ "$(wc -l < "$T/err")" = 1 ] && ok || bad "missing argument: not one line"
expect 2 "$DEFO" validate "$T/nonexistent.json"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "nonexistent.json" "$T/err" && ok || bad "missing scene file: $(cat "$T/err")"
expect 2 "$DEFO" validate --bogus "$T/bad.json"
expect 2 "$DEFO" validate "$T/bad.json" "$T/bad.json"

# 5. backward Euler solver keys: preconditioner names with a suggestion,
#    rotation_interval 0 (lazy only) without a lazy_tolerance
printf '{"integrator": {"type": "backward_euler", "precond": "two_levl", "rotation_interval": 0},\n "bodies": [{"formulation": "corotated", "generator": {"type": "box"}}]}\n' > "$T/be.json"
expect 2 "$DEFO" validate "$T/be.json"
[ "$(wc -l < "$T/err")" = 2 ] && ok || bad "be.json: want 2 error lines: $(cat "$T/err")"
grep -qxF "$T/be.json: integrator.precond: unknown value 'two_levl' (did you mean 'two_level'?)" "$T/err" && ok || bad "precond suggestion: $(cat "$T/err")"
grep -qxF "$T/be.json: integrator.rotation_interval: 0 (rotations only when F moved) needs a lazy_tolerance > 0" "$T/err" && ok || bad "rotation_interval 0 line: $(cat "$T/err")"

# 6. dead loads on a fracturing body are valid (split nodes share them,
#    tractions stay on the faces they were put on)
printf '{"integrator": {"type": "backward_euler"},\n "bodies": [{"formulation": "corotated", "generator": {"type": "box"}, "fracture": {"threshold": 1e4},\n  "forces": [{"box": {"min": [-1, -1, -1], "max": [1, 1, 1]}, "force": [0, 0, 1]}]}]}\n' > "$T/fl.json"
expect 0 "$DEFO" validate "$T/fl.json"
printf '{"integrator": {"type": "backward_euler"},\n "bodies": [{"formulation": "corotated", "generator": {"type": "box"},\n  "forces": [{"box": {"min": [-1, -1, -1], "max": [1, 1, 1]}, "force": [0, 0, 1]}]}]}\n' > "$T/fl2.json"
expect 0 "$DEFO" validate "$T/fl2.json"

# 7. validate opens every mesh and surface file as defo run does: each broken
#    input below is refused by validate (exit 2, a line naming the body's key
#    and the file) and by run alike; a good compressed .vtu passes both.
py=/usr/bin/python3
B="$DEFO_SRC/data/broken"
# three triangles on one edge: not a shell (bending needs two faces per edge)
printf 'v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n' > "$T/tri.obj"
$py -c "
import meshio
m = meshio.read('$DEFO_SRC/data/gmsh/box_o1_msh41.msh')
meshio.write('$T/box.vtu', meshio.Mesh(m.points, [c for c in m.cells if c.type == 'tetra']), binary=False)
"   # tets only, no triangles
cases=(
  'mesh|"mesh": "'"$B"'/vtu_nan.vtu"|bodies\[0\]\.mesh: .*vtu_nan.vtu.*finite|nan'
  'mesh|"mesh": "'"$B"'/vtu_compressed.vtu"|bodies\[0\]\.mesh: .*zlib block 0|zlib'
  'mesh|"mesh": "'"$T"'/tri.obj"|bodies\[0\]\.mesh: .*shared by 3 triangles|non-manifold shell'
  'surface|"surface": {"file": "'"$B"'/obj_no_faces.obj"}|bodies\[0\]\.surface\.file: .*obj_no_faces.obj|no faces'
  'surface|"surface": {"file": "'"$T"'/box.vtu"}|bodies\[0\]\.surface\.file: .*has no triangles|volume as surface'
)
for c in "${cases[@]}"; do
  IFS='|' read -r kind src want name <<< "$c"
  printf '{"duration": {"frames": 1}, "outputs": {"png": false},\n "bodies": [{%s}]}\n' "$src" > "$T/file_$kind.json"
  expect 2 "$DEFO" validate "$T/file_$kind.json"
  [ "$(wc -l < "$T/err")" = 1 ] && grep -q "$want" "$T/err" && ok || bad "validate $name: $(cat "$T/err")"
  "$DEFO" run "$T/file_$kind.json" -o "$T/run_$kind" --threads 1 --quiet > /dev/null 2>&1; rc=$?
  [ $rc = 2 ] && ok || bad "run of the scene validate refused ($name) exit $rc, want 2"
  rm -rf "$T/run_$kind"
done
# meshio's default .vtu (zlib) of a tet mesh: validate accepts it and so does run
if $py -c "import meshio" 2> /dev/null; then
  $py -c "import meshio; meshio.write('$T/z.vtu', meshio.read('$T/box.vtu'))"
  printf '{"duration": {"frames": 1}, "outputs": {"png": false},\n "bodies": [{"mesh": "%s"}]}\n' "$T/z.vtu" > "$T/zlib.json"
  expect 0 "$DEFO" validate "$T/zlib.json"
  "$DEFO" run "$T/zlib.json" -o "$T/run_zlib" --threads 1 --quiet > /dev/null 2>&1 && ok || bad "run of a zlib .vtu body"
fi

# The benchmark scenes (bench/scenes, the issue-6 cantilever) are valid scenes
# that `defo run` accepts.
for f in "$DEFO_SRC"/bench/scenes/*.json; do
  "$DEFO" validate "$f" > /dev/null 2>&1 && ok || bad "bench scene $(basename "$f") does not validate"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
