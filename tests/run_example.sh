#!/usr/bin/env bash
# Run one example program into a fresh folder and check it completed and
# wrote frames ParaView can open (at least one .vtu, every one non-empty and
# starting with the VTK XML header).
set -euo pipefail
prog=$1
out=$2
shift 2 # the rest are the example's own arguments after OUTDIR
rm -rf "$out"
mkdir -p "$out"
"$prog" "$out" "$@"
shopt -s nullglob
frames=("$out"/*.vtu "$out"/*/*.vtu)
if [ ${#frames[@]} -eq 0 ]; then
  echo "example wrote no .vtu frames into $out"
  echo "0 passed, 1 failed"
  exit 1
fi
for f in "${frames[@]}"; do
  if ! head -c 200 "$f" | grep -q "<VTKFile"; then
    echo "not a VTK XML file: $f"
    echo "0 passed, 1 failed"
    exit 1
  fi
done
echo "example $(basename "$prog"): ${#frames[@]} frames"
echo "1 passed, 0 failed"
