#!/usr/bin/env bash
# bench/contact_ab.sh — the body–body contact layer's cost, one build against
# another, interleaved (old, new, old, new, ...) so that a busy machine
# weighs on both alike; medians over REPEAT runs.
#
#   bench/contact_ab.sh [NEW_BUILD [OLD_BUILD]]
#
# Cases (each a row of JSON per build and thread count):
#   pile       bench_contact's pile of 20 soft balls (46 080 tets, Newmark),
#              its first FRAMES frames: median frame [ms], contact share;
#   in_flight  bench_hybrid's 200 rigid fragments in flight, nothing
#              touching: median step [ms], contact share.
# Without OLD_BUILD only NEW_BUILD (default build) is measured.
# Environment: THREADS ("1 2 4 8 16"), REPEAT (3), FRAMES (3), CASES
# ("pile in_flight").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
new=${1:-$here/build}
old=${2:-}
threads=${THREADS:-1 2 4 8 16}
repeat=${REPEAT:-3}
frames=${FRAMES:-3}
cases=${CASES:-pile in_flight}
builds=("$new")
[ -n "$old" ] && builds=("$old" "$new")
progs=
case " $cases " in *" pile "*) progs="$progs bench_contact" ;; esac
case " $cases " in *" in_flight "*) progs="$progs bench_hybrid" ;; esac
for b in "${builds[@]}"; do
  for p in $progs; do
    [ -x "$b/$p" ] || { echo "contact_ab: no $b/$p (make build first)" >&2; exit 2; }
  done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() { grep -o "\"$1\": [-0-9.e+]*" | head -1 | awk '{print $2}'; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "null"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for t in $threads; do
  for c in $cases; do
    for ((r = 0; r < repeat; r++)); do
      for i in "${!builds[@]}"; do
        b=${builds[$i]}
        if [ "$c" = pile ]; then
          out=$("$b/bench_contact" "$t" pile 20 "$frames")
          echo "$out" | field frame_median_ms >> "$tmp/$c.$t.$i.ms"
        else
          out=$("$b/bench_hybrid" --only in_flight --threads "$t")
          echo "$out" | field ms_per_step >> "$tmp/$c.$t.$i.ms"
        fi
        echo "$out" | field contact_share >> "$tmp/$c.$t.$i.share"
      done
    done
    for i in "${!builds[@]}"; do
      printf '{"case": "%s", "build": "%s", "threads": %s, "runs": %s, "median_ms": %s, "contact_share": %s}\n' \
        "$c" "${builds[$i]}" "$t" "$repeat" "$(median < "$tmp/$c.$t.$i.ms")" \
        "$(median < "$tmp/$c.$t.$i.share")"
    done
  done
done
