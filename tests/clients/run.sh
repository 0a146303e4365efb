#!/usr/bin/env bash
# defo's files in the real clients (`make test-clients`; .ci/run after `make test`):
# Blender 3.4 headless (Debian `blender`) and ParaView 5.11's pvpython
# (Debian `paraview`, `python3-paraview`), which scripts/deps.sh clients installs.
#
#   1. a drop: a tet4 sphere, a tet10 box and a box carrying an embedded
#      surface fall for 6 frames, with point caches (outputs.pc2, .mdd):
#      Blender, the README's three clicks — import cache/NAME.obj, add a Mesh
#      Cache modifier, pick the .pc2 (then the .mdd) — gives at frames 0, 3
#      and 6 every vertex of defo's surface/frame_NNNN.obj to float precision
#      (blender_check.py); so does tools/blender/defo_import.py, which also
#      sets the run's frame rate and range; ParaView opens scene.pvd: one
#      time step per frame at k/fps, every field, the tet10 box as quadratic
#      tetrahedra, the last frame's points and displacement equal to meshio's
#      reading of the .vtu bit for bit (paraview_read.py, compare_meshio.py);
#   2. a tear (MMDJ01 §2.5 fracture, examples/scenes/tear.json's bar) beside a
#      cached cube: the add-on loads the torn bar as a frame sequence that
#      shows frame k's surface at frame k; ParaView reads a point count that
#      grows from frame to frame, equal to meshio's at every step.
# Usage: tests/clients/run.sh [BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-$src/build}
DEFO=$build/defo
T=$build/test-tmp/clients
py=/usr/bin/python3
fail=0; pass=0; nb=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
for tool in blender pvpython "$DEFO"; do
  command -v "$tool" > /dev/null || { echo "test-clients: $tool not found (make test-clients installs Blender and ParaView)"; exit 1; }
done
rm -rf "$T"; mkdir -p "$T"

blender_check() { # [--still] RUNDIR MODE FORMAT FRAMES...
  nb=$((nb + 1)); local log="$T/blender_$nb.log"
  if blender -b --factory-startup --python "$here/blender_check.py" -- "$@" > "$log" 2>&1; then ok
  else bad "Blender $*: $(grep -E 'blender_check|Error' "$log" | tail -5)"; fi
  grep '^blender_check:' "$log" | grep -v 'largest move' | sed 's/^/  /'
}
paraview_check() { # RUNDIR FLAGS...
  local run=$1; shift
  local log="$T/paraview_$(basename "$run").log"
  if pvpython "$here/paraview_read.py" "$run" "$T/$(basename "$run").npz" > "$log" 2>&1 \
     && $py "$here/compare_meshio.py" "$run" "$T/$(basename "$run").npz" "$@" >> "$log" 2>&1; then ok
  else bad "ParaView on $(basename "$run"): $(tail -5 "$log")"; fi
  grep -E '^(paraview_read|compare_meshio):' "$log" | sed 's/^/  /'
}

# 1. the drop
cat > "$T/drop.json" <<JSON
{
  "name": "clients drop",
  "duration": {"fps": 24, "frames": 6},
  "bodies": [
    {"name": "ball", "generator": {"type": "sphere", "radius": 0.2, "center": [0, 0, 0.3], "cell_size": 0.08},
     "material": {"youngs": 2e4}},
    {"name": "quadratic box", "generator": {"type": "box", "size": [0.2, 0.2, 0.2], "center": [0.5, 0, 0.3],
     "cells": [2, 2, 2], "order": 2}, "material": {"youngs": 2e4}},
    {"name": "eight", "generator": {"type": "box", "size": [0.6, 0.3, 1.1], "center": [-0.8, 0, 0.6],
     "cells": [2, 1, 4]}, "material": {"youngs": 2e4},
     "embedded": {"file": "$src/data/meshes/eight.off"}}
  ],
  "colliders": [{"name": "ground", "type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}],
  "outputs": {"pc2": true, "mdd": true}
}
JSON
"$DEFO" run "$T/drop.json" -o "$T/drop" --quiet > "$T/drop.log" 2>&1 && ok || bad "defo run drop: $(cat "$T/drop.log")"
blender_check "$T/drop" clicks pc2 0 3 6
blender_check "$T/drop" clicks mdd 0 6
blender_check "$T/drop" addon pc2 0 6
paraview_check "$T/drop" --tet10

# 2. the tear
$py - "$src/examples/scenes/tear.json" "$T/tear.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["duration"] = {"fps": 30, "frames": 10}  # the bar breaks between frames 6 and 10
s["bodies"].append({"name": "cube", "generator": {"type": "box", "size": [0.1, 0.1, 0.1],
                    "center": [0, 0.5, 0.3], "cells": 1}})
s["outputs"] = {"pc2": True}
json.dump(s, open(sys.argv[2], "w"))
PY
"$DEFO" run "$T/tear.json" -o "$T/tear" --quiet > "$T/tear.log" 2>&1 && ok || bad "defo run tear: $(cat "$T/tear.log")"
grep -q "bodies\[0\] 'bar' has \"fracture\"" "$T/tear.log" && ok || bad "tear: no message about the uncached bar: $(cat "$T/tear.log")"
blender_check --still "$T/tear" addon pc2 0 1 3  # no gravity: the cube stays
paraview_check "$T/tear" --grows

echo "test-clients: $pass passed, $fail failed"
[ "$fail" = 0 ]
