#!/bin/sh
# Run every libFuzzer target in BUILD for SECONDS each, seeded from the
# broken-file corpus and the shipped data; report runs and findings.
# Usage: scripts/run-fuzzers.sh BUILD SECONDS
set -eu
build=$1
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$build/fuzz-out"
mkdir -p "$out"
status=0
found=0
for f in "$build"/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  corpus="$out/corpus-$name"
  mkdir -p "$corpus"
  # Seeds: shipped good and broken files of the matching family.
  fam=${name#fuzz_}
  for s in "$root"/data/*/*."$fam"* "$root"/data/broken/"$fam"_*; do
    [ -f "$s" ] && cp "$s" "$corpus/" 2>/dev/null || true
  done
  log="$out/$name.log"
  if "$f" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$out/$name-" "$corpus" >"$log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1 || true)
    echo "$name: ${runs:-ran} in ${seconds}s, no crash"
  else
    echo "$name: FOUND A PROBLEM, see $log and $out/$name-*"
    found=$((found + 1))
    status=1
  fi
done
echo "fuzzing: $found targets with findings"
exit $status
