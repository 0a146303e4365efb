#!/bin/sh
# scripts/bench_scaling_device.sh — the thread-scaling table of the four
# workstation scenes (bench/bench_scaling.c) on a many-core machine, in about
# three minutes on a 16-core one: each scene in its own bench_scaling run
# (its frames and repetitions chosen to fit; a time limit per scene), the
# JSON of each run kept, and one table at the end: median ms per step or
# frame at each thread count, the best speed-up, CG iterations per step, the
# GB/s the CG iterations streamed at 1 thread, and whether every thread count
# ended bit for bit alike.
#
# Two ways to run it:
#
#   1. where it was built (bench_scaling linked against the system's
#      libraries):
#        sh scripts/bench_scaling_device.sh build/bench_scaling
#
#   2. on a machine without the build's libraries: pack the binary, the
#      shared libraries it needs (ldd) and the dynamic loader into a folder
#      git ignores, carry that folder there, and run it through the loader:
#        sh scripts/bench_scaling_device.sh --pack build/device build/bench_scaling
#        ... then, on the other machine, from the repository root:
#        sh scripts/bench_scaling_device.sh --lib build/device/lib build/device/bench_scaling
#      (--lib DIR runs DIR/ld-linux-x86-64.so.2 --library-path DIR BINARY.)
#
# Options (before the binary):
#   --lib DIR       run through the loader and libraries in DIR (see above)
#   --threads LIST  thread counts, default 1,2,4,8,16
#   --scenes DIR    the scenes' folder, default bench/scenes of this checkout
#   --out DIR       where the JSON and the table go, default $OUT or bench/out
#   --only LIST     only these scenes (comma-separated names, e.g.
#                   cantilever_n13,drop_bunny)
#   --full          every scene's own frames, 3 repetitions (about 8-10
#                   minutes on 16 cores instead of about 3)
#   --pack DIR BIN  copy BIN, its libraries and the loader into DIR and DIR/lib
#
# The OpenMP spin is set short (GOMP_SPINCOUNT=1000, as `defo run` and
# bench_scaling set it for themselves; started through the loader,
# bench_scaling cannot restart itself to set it) unless OMP_WAIT_POLICY or
# GOMP_SPINCOUNT is already set.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
lib=""
threads="1,2,4,8,16"
scenes="$here/bench/scenes"
out="${OUT:-$here/bench/out}"
full=0
only=""

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    --lib) lib="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --scenes) scenes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    --full) full=1; shift ;;
    --pack)
        [ $# -eq 3 ] || usage
        dir="$2"; bin="$3"
        mkdir -p "$dir/lib" || exit 1
        cp -L "$bin" "$dir/" || exit 1
        # every resolved library, and the loader (the line without "=>")
        ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $2 != "=>" && $1 ~ /^\// {print $1}' |
            while read -r so; do cp -L "$so" "$dir/lib/" || exit 1; done || exit 1
        [ -e "$dir/lib/ld-linux-x86-64.so.2" ] || { echo "no ld-linux-x86-64.so.2 in ldd's list" >&2; exit 1; }
        echo "packed $(ls "$dir/lib" | wc -l) libraries, $(du -sh "$dir" | cut -f1) in all, into $dir"
        exit 0 ;;
    -h|--help) usage ;;
    -*) echo "bench_scaling_device.sh: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || usage
bin="$1"
[ -x "$bin" ] || [ -n "$lib" ] || { echo "bench_scaling_device.sh: $bin is not an executable" >&2; exit 2; }
if [ -n "$lib" ]; then
    [ -e "$lib/ld-linux-x86-64.so.2" ] || { echo "bench_scaling_device.sh: no $lib/ld-linux-x86-64.so.2" >&2; exit 2; }
    set -- "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$bin"
else
    set -- "$bin"
fi
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then
    GOMP_SPINCOUNT=1000
    export GOMP_SPINCOUNT
fi
mkdir -p "$out" || exit 1

# scene, frames, repetitions, time limit [s] — the quick profile keeps the
# cantilever n = 13 whole and cuts the frames of the others (ms per frame of
# a prefix of the run: compare it only with the same profile)
if [ "$full" -eq 1 ]; then
    plan="cantilever_n13 0 3 120
cantilever_n20 0 3 300
squash_98k 0 3 420
drop_bunny 0 3 240"
else
    plan="cantilever_n13 0 3 45
cantilever_n20 10 3 80
squash_98k 5 3 110
drop_bunny 10 3 60"
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "threads $threads; GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-}"
start=$(date +%s)
rows="$out/bench_scaling_rows.md"
: >"$rows"
rm -f "$out/bench_scaling_header.md"
echo "$plan" | while read -r name frames reps limit; do
    case "$only" in "" | *",$name,"*) ;; *) continue ;; esac
    t0=$(date +%s)
    fopt=""
    [ "$frames" -gt 0 ] && fopt="--frames $frames"
    # shellcheck disable=SC2086
    timeout "$limit" "$@" --reps "$reps" --threads "$threads" $fopt "$scenes/$name.json" \
        >"$out/bench_scaling_$name.json" 2>"$out/bench_scaling_$name.err"
    rc=$?
    t1=$(date +%s)
    if [ $rc -ne 0 ]; then
        echo "$name: bench_scaling exited with $rc after $((t1 - t0)) s (124: over its ${limit} s)" >&2
        tail -3 "$out/bench_scaling_$name.err" >&2
        echo "| $name | exit $rc |" >>"$rows"
        continue
    fi
    if [ ! -s "$out/bench_scaling_header.md" ]; then
        grep '^| scene' "$out/bench_scaling_$name.err" >"$out/bench_scaling_header.md"
        grep '^|---' "$out/bench_scaling_$name.err" >>"$out/bench_scaling_header.md"
    fi
    label="$name"
    [ "$frames" -gt 0 ] && label="$name, first $frames frames"
    grep "^| $name " "$out/bench_scaling_$name.err" | sed "s/^| $name /| $label /" >>"$rows"
    echo "$name: $((t1 - t0)) s, $reps repetitions"
done
echo
cat "$out/bench_scaling_header.md" "$rows" 2>/dev/null | tee "$out/bench_scaling_table.md"
echo
echo "total $(($(date +%s) - start)) s; JSON per scene in $out/bench_scaling_*.json"
