#!/usr/bin/env bash
# bench/mpi_scaling.sh — rank scaling of `mpirun -n N defo run` (docs/distributed.md).
#
#   bench/mpi_scaling.sh pack [BUILD] [BUNDLE]
#       Copies what a machine without defo, PETSc or OpenMPI needs into BUNDLE
#       (default build/mpi-bundle, ignored by git): BUILD/defo (default build),
#       OpenMPI's launcher (orterun), its plugins, help texts and settings,
#       PMIx plugins, and every shared library these load, the C
#       library and its loader included, as one defo-mpi.tar.xz. Everything
#       runs through the bundled loader, so the host's own C library does not
#       matter (any x86-64 Linux).
#   bench/mpi_scaling.sh run [BUNDLE]
#       The quasistatic squash (TSIF05: a ball pressed into a soft neo-Hookean
#       block, 48×48×24 cubes of 6 tets = 331 776 tets, 60 025 nodes) for
#       FRAMES frames on N = 1, 2, 4, 8, 16 processes ("solver": "petsc": CG,
#       GAMG with the rigid-body near-null space, named in petsc_options so
#       that N = 1 runs it too), then the backend's one-process default
#       (defo's preconditioner in PETSc) and defo's own solver on one process and one thread; prints
#       one table row per run:
#       ms per frame, ms per Newton iteration, speed-up and parallel
#       efficiency over N = 1, Newton and CG iterations per frame, and the
#       solves that stopped short of their tolerance (stats.jsonl's
#       not_converged, all frames: a Newton solve at max_iterations is
#       slow for the wrong reason).
#       Without BUNDLE (or with an empty one) it runs ./build/defo with the
#       mpirun on PATH.
# Environment of pack: PACK_EXTRA (more programs to bundle with their libraries,
# e.g. "build/bench_scaling build/bench_contact", run through the same loader).
# Environment of run: RANKS ("1 2 4 8 16"), CELLS ("48 48 24"), FRAMES (2), OWN (1: the
# row of defo's own solver; 0 leaves it out), KEEP (the run folders' parent;
# default a temporary folder, removed).
set -euo pipefail
mode=${1:-run}
here=$(cd "$(dirname "$0")/.." && pwd)

pack() {
  local build=${1:-$here/build} out=${2:-$here/build/mpi-bundle}
  local ompi=/usr/lib/x86_64-linux-gnu/openmpi pmix=/usr/lib/x86_64-linux-gnu/pmix2
  [ -x "$build/defo" ] || { echo "pack: no $build/defo (make build first)" >&2; exit 2; }
  [ -x /usr/bin/orterun ] || { echo "pack: no OpenMPI (scripts/deps.sh test)" >&2; exit 2; }
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/b/bin" "$stage/b/lib" "$stage/b/etc" "$stage/b/share"
  # shellcheck disable=SC2086 # PACK_EXTRA: more programs of the build (a list)
  cp -L "$build/defo" /usr/bin/orterun ${PACK_EXTRA:-} "$stage/b/bin/"
  cp -rL "$ompi/lib/openmpi3" "$stage/b/ompi-plugins"
  cp -rL "$pmix/lib/pmix" "$stage/b/pmix-plugins"
  mkdir -p "$stage/b/hwloc-plugins" # none: hwloc's GL/OpenCL/XML plugins pull in 40 MB
  cp -rL /usr/share/openmpi "$stage/b/share/openmpi"
  [ -d /usr/share/pmix ] && cp -rL /usr/share/pmix "$stage/b/share/pmix"
  cp -rL /etc/openmpi "$stage/b/etc/openmpi"
  # every shared library the programs and plugins load (ldd follows the chains)
  find "$stage/b/bin" "$stage/b/ompi-plugins" "$stage/b/pmix-plugins" "$stage/b/hwloc-plugins" \
    -type f \( -name '*.so*' -o -perm -u+x \) 2>/dev/null |
    while read -r f; do ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'; done |
    sort -u | while read -r lib; do cp -L "$lib" "$stage/b/lib/"; done
  cp -L "$ompi"/lib/lib*.so* "$stage/b/lib/" 2>/dev/null || true
  mkdir -p "$out"
  rm -f "$out/defo-mpi.tar.xz"
  tar -C "$stage" -cf - b | xz -T2 -1 > "$out/defo-mpi.tar.xz"
  rm -rf "$stage"
  echo "pack: $out/defo-mpi.tar.xz, $(du -h "$out/defo-mpi.tar.xz" | cut -f1)"
}

run() {
  local bundle=${1:-$here/build/mpi-bundle}
  local work keep=${KEEP:-}
  work=$(mktemp -d)
  [ -n "$keep" ] && mkdir -p "$keep"
  local rundir=${keep:-$work}
  local -a launch defo
  # (a wait policy chosen: defo does not restart itself through /proc/self/exe,
  # which is the bundled loader when run through it; one thread anyway)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
  export OMP_WAIT_POLICY=PASSIVE
  export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
  if [ -f "$bundle/defo-mpi.tar.xz" ]; then
    tar -C "$work" -xJf "$bundle/defo-mpi.tar.xz"
    local B=$work/b ld
    ld=$(ls "$B"/lib/ld-linux-x86-64.so.* | head -1)
    export OPAL_PREFIX=$B OPAL_EXEC_PREFIX=$B OPAL_BINDIR=$B/bin OPAL_LIBDIR=$B/lib
    export OPAL_PKGLIBDIR=$B/ompi-plugins OPAL_DATADIR=$B/share OPAL_PKGDATADIR=$B/share/openmpi
    export OPAL_SYSCONFDIR=$B/etc/openmpi OMPI_MCA_mca_base_component_path=$B/ompi-plugins
    export PMIX_MCA_mca_base_component_path=$B/pmix-plugins PMIX_INSTALL_PREFIX=$B
    export HWLOC_PLUGINS_PATH=$B/hwloc-plugins
    launch=("$ld" --library-path "$B/lib" "$B/bin/orterun")
    defo=("$ld" --library-path "$B/lib" "$B/bin/defo")
  else
    command -v mpirun >/dev/null || { echo "run: no bundle in $bundle and no mpirun" >&2; exit 2; }
    launch=(mpirun)
    defo=("$here/build/defo")
  fi
  local cells=${CELLS:-48 48 24} frames=${FRAMES:-2} cores
  cores=$(getconf _NPROCESSORS_ONLN) # (nproc obeys OMP_NUM_THREADS)
  read -r cx cy cz <<< "$cells"
  scene() { # SOLVER [PETSC_OPTIONS]
    local opts=""
    [ -n "${2:-}" ] && opts=", \"petsc_options\": \"$2\""
    cat <<JSON
{
  "name": "quasistatic squash, ${cx}x${cy}x${cz} cubes of 6 tets",
  "duration": {"frames": $frames, "fps": 10},
  "integrator": {"type": "quasistatic", "tolerance": 1e-5, "max_iterations": 60, "solver": "$1"$opts},
  "bodies": [
    {"name": "block",
     "generator": {"type": "box", "center": [0, 0, 0.1], "size": [0.4, 0.4, 0.2],
                   "cells": [$cx, $cy, $cz], "split": "6"},
     "material": {"model": "neo_hookean", "youngs": 1e4, "poisson": 0.4, "density": 1000,
                  "inversion": {"mode": "c1", "threshold": 0.3}},
     "fixed": [{"plane": {"point": [0, 0, 0], "normal": [0, 0, 1]}}]}
  ],
  "colliders": [
    {"name": "ball", "type": "sphere", "center": [0, 0, 0.3], "radius": 0.1,
     "motion": {"velocity": [0, 0, -0.3]}}
  ],
  "outputs": {"vtu": false, "surface_obj": false, "checkpoint": false}
}
JSON
  }
  scene petsc "-pc_type gamg" > "$work/petsc.json"
  scene petsc > "$work/petsc1.json"
  scene pcg > "$work/own.json"
  num() { sed -n "s/.*\"$2\": *\([-0-9.eE+]*\).*/\1/p" "$1" | head -1; }
  echo "defo on $(uname -n): $cores cores, $((cx * cy * cz * 6)) tets, $frames frames"
  printf '%-22s %6s %10s %12s %9s %6s %8s %8s %8s %7s\n' run N "ms/frame" "ms/Newton" speed-up eff \
    "Newton" "CG" "CG/Newt" "unconv"
  local base=""
  row() { # LABEL N DIR
    local s=$3/summary.json
    local sim ni ci fr nc
    sim=$(num "$s" simulate_s); ni=$(num "$s" newton_iters); ci=$(num "$s" cg_iters)
    fr=$(num "$s" frames_completed)
    nc=$(sed -n 's/.*"not_converged": *\([0-9]*\).*/\1/p' "$3/stats.jsonl" | awk '{t += $1} END {print t + 0}')
    awk -v l="$1" -v n="$2" -v sim="$sim" -v ni="$ni" -v ci="$ci" -v fr="$fr" -v base="$4" \
        -v nc="$nc" 'BEGIN {
      ms = 1000 * sim / fr; sp = base > 0 ? base / sim : 1
      eff = l ~ /^petsc/ ? sprintf("%5.0f%%", 100 * sp / n) : "     -"
      printf "%-22s %6d %10.0f %12.1f %9.2f %s %8.1f %8.0f %8.1f %7d\n", l, n, ms, 1000 * sim / ni,
             sp, eff, ni / fr, ci / fr, ci / ni, nc }'
  }
  for n in ${RANKS:-1 2 4 8 16}; do
    local bind=core
    [ "$n" -gt "$cores" ] && bind=none && export OMPI_MCA_mpi_yield_when_idle=1
    local d=$rundir/petsc_np$n
    rm -rf "$d"
    if ! "${launch[@]}" -n "$n" --bind-to "$bind" "${defo[@]}" run "$work/petsc.json" -o "$d" \
        --threads 1 --quiet > "$work/np$n.log" 2>&1; then
      echo "N = $n failed:"; tail -5 "$work/np$n.log"; continue
    fi
    [ -z "$base" ] && base=$(num "$d/summary.json" simulate_s)
    row "petsc (CG + GAMG)" "$n" "$d" "$base"
  done
  if [ "${OWN:-1}" = 1 ]; then
    local d=$rundir/petsc_default
    rm -rf "$d"
    if "${launch[@]}" -n 1 --bind-to core "${defo[@]}" run "$work/petsc1.json" -o "$d" --threads 1 \
        --quiet > "$work/p1.log" 2>&1; then
      row "PETSc default, 1 process" 1 "$d" "$base"
    else
      echo "the backend's one-process default failed:"; tail -5 "$work/p1.log"
    fi
    d=$rundir/own
    rm -rf "$d"
    if "${defo[@]}" run "$work/own.json" -o "$d" --threads 1 --quiet > "$work/own.log" 2>&1; then
      row "defo pcg, 1 thread" 1 "$d" "$base"
    else
      echo "defo's own solver failed:"; tail -5 "$work/own.log"
    fi
  fi
  echo "(speed-up and efficiency over petsc N = 1; the last rows' speed-up is petsc N = 1 over them)"
  rm -rf "$work"
}

case "$mode" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: bench/mpi_scaling.sh pack [BUILD] [BUNDLE] | run [BUNDLE]" >&2; exit 2 ;;
esac
