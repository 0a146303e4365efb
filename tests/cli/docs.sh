#!/usr/bin/env bash
# The documentation refers only to files the repository has: every NAME.md
# mentioned in README.md and docs/*.md exists (relative to the mentioning
# file, or to the repository root).  A reference to a design page kept
# outside the repository (docs/scene-format.md once pointed to one) fails.
set -uo pipefail
fail=0; pass=0
cd "$DEFO_SRC" || exit 1
for f in README.md docs/*.md; do
  dir=$(dirname "$f")
  for ref in $(grep -oE '[A-Za-z0-9_./-]*\.md\b' "$f" | sort -u); do  # not .mdd
    if [ -e "$dir/$ref" ] || [ -e "$ref" ]; then pass=$((pass + 1))
    else echo "FAIL: $f mentions $ref, which the repository does not have"; fail=$((fail + 1)); fi
  done
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
