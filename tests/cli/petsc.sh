#!/usr/bin/env bash
# `mpirun -n N defo run` (docs/distributed.md), end to end through the CLI.
#   1. A quasistatic bar (a moving bone twists and pulls it) and a damped
#      Newmark drop onto the ground, on 2 processes: rank 0 writes the
#      files a one-process run writes (the same file names), and every
#      frame's displacements are those of the one-process run of the same
#      scene within 1e-7 (relative; the solvers' tolerances are 1e-10).
#   2. Resume on another process count: the bar run on 2 processes stopped
#      after frame 2 (--frames 2) and continued on 1, and the reverse, equal
#      to the uninterrupted runs within 1e-7 (relative).
#   3. Refusals, each exit 2 with the reason, nothing simulated: "solver":
#      "pcg" on 2 processes, fracture, contact between bodies, a misspelt
#      petsc_options name, another scene file on one of the processes, and
#      petsc_options without "solver": "petsc" (defo validate).
#   4. A process that dies (rank 1 killed by SIGKILL in frame 3 of 6): the
#      run ends with an error (mpirun says which rank and signal), and the
#      checkpoint of the last complete frame resumes on one process to the
#      uninterrupted run's last frame.
# Skipped (exit 0, said) when defo was built without PETSc or mpirun is missing.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_petsc"
rm -rf "$T"; mkdir -p "$T"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 OMP_NUM_THREADS=1
MPI=(mpirun -n 2)

if ! command -v mpirun >/dev/null; then echo "skipped: no mpirun"; exit 0; fi
# The sanitizer build: its ~20 process launches (each 3-10x slower) are past
# that pass's time; tests/mpi/test_mpi_world runs the same library paths
# (1 and 2 processes) under the sanitizers.
if [ "${DEFO_SANITIZE:-OFF}" = ON ]; then
  echo "skipped in the sanitizer build: too slow there; test_mpi_world_np1/np2 cover the paths"; exit 0
fi

bar() { # NAME SOLVER FRAMES [EXTRA BODY KEYS]
  cat > "$T/$1.json" <<JSON
{
  "name": "$1",
  "duration": {"frames": $3, "fps": 10},
  "gravity": [0, 0, -9.81],
  "integrator": {"type": "quasistatic", "tolerance": 1e-10, "solver": "$2"},
  "bodies": [
    {"name": "bar",
     "generator": {"type": "box", "center": [0.5, 0, 0], "size": [1, 0.2, 0.2], "cells": [15, 3, 3]},
     "material": {"model": "neo_hookean", "youngs": 1e5, "poisson": 0.4, "density": 1000}$4,
     "fixed": [{"box": {"min": [-0.01, -1, -1], "max": [0.01, 1, 1]}},
               {"box": {"min": [0.99, -1, -1], "max": [1.01, 1, 1]},
                "motion": {"velocity": [0.05, 0, 0], "axis": [1, 0, 0], "angular_speed": 1.5,
                           "pivot": [1, 0, 0]}}]}
  ],
  "outputs": {"surface_obj": false}
}
JSON
}
bar qs petsc 4 ""
bar qs_pcg pcg 4 ""

# built without PETSc: the scene is refused with the reason, and nothing more to test
out=$("$DEFO" run "$T/qs.json" -o "$T/probe" --frames 1 --quiet 2>&1); rc=$?
if [ $rc -ne 0 ]; then
  if grep -q "without PETSc" <<< "$out"; then echo "skipped: defo built without PETSc"; exit 0; fi
  bad "one-process run of qs.json: rc $rc: $out"
fi

# frames of two runs: the largest |u_a − u_b| over the largest |u_a|, per frame
cmp_runs() { # DIR_A DIR_B LIMIT
  $py - "$1" "$2" "$3" <<'PY'
import glob, os, sys, meshio, numpy as np
a, b, lim = sys.argv[1], sys.argv[2], float(sys.argv[3])
fa = sorted(glob.glob(a + "/frames/frame_*.vtu"))
fb = sorted(glob.glob(b + "/frames/frame_*.vtu"))
if [os.path.basename(f) for f in fa] != [os.path.basename(f) for f in fb] or not fa:
    print("frame files differ:", len(fa), len(fb)); sys.exit(1)
worst = 0.0
for x, y in zip(fa, fb):
    ua = meshio.read(x).point_data["displacement"]
    ub = meshio.read(y).point_data["displacement"]
    worst = max(worst, np.abs(ua - ub).max() / max(np.abs(ua).max(), 1e-300))
print("%d frames, largest relative difference %.3g" % (len(fa), worst))
sys.exit(0 if worst <= lim else 1)
PY
}
files() { (cd "$1" && find . -type f ! -name '*.tmp*' | sort | tr '\n' ' '); }

# 1. two processes against one
"$DEFO" run "$T/qs.json" -o "$T/one" --quiet >/dev/null 2>"$T/one.err" || bad "qs on 1: $(cat "$T/one.err")"
if "${MPI[@]}" "$DEFO" run "$T/qs.json" -o "$T/two" > "$T/two.out" 2>&1; then ok; else bad "qs on 2: $(tail -3 "$T/two.out")"; fi
if [ "$(files "$T/one")" = "$(files "$T/two")" ]; then ok; else bad "files: $(files "$T/one") / $(files "$T/two")"; fi
if grep -q "'bar'" "$T/two.out" || grep -q "4 frames" "$T/two.out"; then ok; else bad "rank 0 said: $(cat "$T/two.out")"; fi
[ "$(grep -c 'defo run: 4 frames' "$T/two.out")" = 1 ] && ok || bad "one summary line expected (rank 0 speaks): $(cat "$T/two.out")"
r=$(cmp_runs "$T/one" "$T/two" 1e-7) && ok || bad "qs 2 vs 1: $r"
echo "quasistatic bar, 2 processes vs 1: $r"
"$DEFO" run "$T/qs_pcg.json" -o "$T/own" --quiet >/dev/null 2>&1 || bad "qs_pcg"
r=$(cmp_runs "$T/own" "$T/two" 1e-7) && ok || bad "qs 2 (petsc) vs 1 (defo's pcg): $r"
echo "quasistatic bar, 2 processes (PETSc) vs defo's own solver: $r"

cat > "$T/drop.json" <<'JSON'
{
  "name": "drop",
  "duration": {"fps": 30, "frames": 4},
  "integrator": {"type": "newmark", "solver": "petsc", "cg": {"tolerance": 1e-10}},
  "bodies": [
    {"name": "block",
     "generator": {"type": "box", "center": [0, 0, 0.12], "size": [0.2, 0.2, 0.2], "cells": [5, 5, 5]},
     "material": {"model": "neo_hookean", "youngs": 2e4, "poisson": 0.3, "density": 1000, "damping": 0.01},
     "velocity": [0, 0, -1]}
  ],
  "colliders": [{"name": "ground", "type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}],
  "outputs": {"surface_obj": false}
}
JSON
"$DEFO" run "$T/drop.json" -o "$T/drop1" --quiet >/dev/null 2>&1 || bad "drop on 1"
"${MPI[@]}" "$DEFO" run "$T/drop.json" -o "$T/drop2" --quiet >/dev/null 2>&1 || bad "drop on 2"
r=$(cmp_runs "$T/drop1" "$T/drop2" 1e-7) && ok || bad "drop 2 vs 1: $r"
echo "newmark drop with damping, 2 processes vs 1: $r"

# 2. resume on another process count
"${MPI[@]}" "$DEFO" run "$T/qs.json" -o "$T/r21" --frames 2 --quiet >/dev/null 2>&1 || bad "qs 2 frames on 2"
"$DEFO" run --resume "$T/r21" --frames 4 --quiet >/dev/null 2>"$T/r21.err" || bad "resume on 1: $(cat "$T/r21.err")"
r=$(cmp_runs "$T/two" "$T/r21" 1e-7) && ok || bad "2 → 1: $r"
echo "stopped on 2 processes after frame 2, resumed on 1: $r"
"$DEFO" run "$T/qs.json" -o "$T/r12" --frames 2 --quiet >/dev/null 2>&1 || bad "qs 2 frames on 1"
"${MPI[@]}" "$DEFO" run --resume "$T/r12" --frames 4 --quiet >/dev/null 2>"$T/r12.err" || bad "resume on 2: $(cat "$T/r12.err")"
r=$(cmp_runs "$T/one" "$T/r12" 1e-7) && ok || bad "1 → 2: $r"
echo "stopped on 1 process after frame 2, resumed on 2: $r"

# 3. refusals: exit 2, the reason, no run folder
refuse() { # NAME PATTERN CMD...  (NAME.out must not be created, unless NAME is typo:
  # an option name is known unused only once the solver has read its options,
  # at the first solve, after frame 0 was written)
  local name=$1 pat=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$pat" <<< "$out" && { [ "$name" = typo ] || [ ! -e "$T/$name.out" ]; }; then ok
  else bad "$name: rc $rc, wanted /$pat/: $out"; fi
}
refuse pcg '"solver": "petsc"' "${MPI[@]}" "$DEFO" run "$T/qs_pcg.json" -o "$T/pcg.out"
bar frac petsc 2 ', "fracture": {"threshold": 1e3}'
refuse frac "fracture" "${MPI[@]}" "$DEFO" run "$T/frac.json" -o "$T/frac.out"
$py - "$T/qs.json" "$T/contact.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
b = dict(s["bodies"][0]); b["name"] = "bar2"
b["generator"] = dict(b["generator"], center=[0.5, 0.3, 0])
b["fixed"] = [b["fixed"][0]]
s["bodies"].append(b)
s["contact"] = {"enabled": True}
json.dump(s, open(sys.argv[2], "w"))
PY
refuse contact "contact between bodies" "${MPI[@]}" "$DEFO" run "$T/contact.json" -o "$T/contact.out"
$py - "$T/qs.json" "$T/typo.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["integrator"]["petsc_options"] = "-ksp_type cg -pc_tyep gamg"
json.dump(s, open(sys.argv[2], "w"))
PY
refuse typo "pc_tyep" "${MPI[@]}" "$DEFO" run "$T/typo.json" -o "$T/typo.out"
bar other petsc 4 ', "velocity": [0, 0, 0.1]'
refuse mismatch "different scenes" mpirun -n 1 "$DEFO" run "$T/qs.json" -o "$T/mismatch.out" : \
  -n 1 "$DEFO" run "$T/other.json" -o "$T/mismatch.out"
$py - "$T/qs_pcg.json" "$T/opts.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["integrator"]["petsc_options"] = "-pc_type gamg"
json.dump(s, open(sys.argv[2], "w"))
PY
out=$("$DEFO" validate "$T/opts.json" 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q 'integrator.petsc_options: needs "solver": "petsc"' <<< "$out"; then ok; else bad "validate opts: $rc $out"; fi

# 4. a process that dies: rank 1 killed in frame 3 of 6
bar slow petsc 6 ""
"$DEFO" run "$T/slow.json" -o "$T/whole" --quiet >/dev/null 2>&1 || bad "slow on 1"
"${MPI[@]}" "$DEFO" run "$T/slow.json" -o "$T/killed" --quiet > "$T/killed.out" 2>&1 &
launcher=$!
for _ in $(seq 1 3000); do [ -e "$T/killed/frames/frame_0002.vtu" ] && break; sleep 0.02; done
victim=""
for p in $(pgrep -P "$launcher"); do
  if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; fi
done
if [ -n "$victim" ]; then kill -KILL "$victim"; else bad "rank 1 not found among $(pgrep -P "$launcher" | tr '\n' ' ')"; fi
wait "$launcher"; rc=$?
if [ $rc -ne 0 ]; then ok; else bad "a run whose rank 1 died exited 0"; fi
grep -qi "signal 9\|killed" "$T/killed.out" && ok || bad "no word of the dead rank: $(cat "$T/killed.out")"
last=$(ls "$T/killed/frames" | sort | tail -1)
"$DEFO" run --resume "$T/killed" --quiet >/dev/null 2>"$T/killed.err" && ok || bad "resume after the death: $(cat "$T/killed.err")"
r=$(cmp_runs "$T/whole" "$T/killed" 1e-7) && ok || bad "resumed after a death: $r"
echo "rank 1 killed (last frame on disk $last), resumed on 1 process: $r"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
