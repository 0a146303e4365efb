#!/usr/bin/env bash
# A stop that stops (issue 14 part 5): `defo run` under SIGINT and SIGTERM.
#   1. A frame that takes many seconds — one quasistatic Newton solve of a
#      block of 192 000 tets pressed by a ball: 33 Newton / 1 812 CG
#      iterations, 11 s of CPU on one thread in the optimised build (about
#      3x that with the sanitizers) — is interrupted 1 s into that frame: the
#      run exits within STOP_BOUND s (5 s; 15 s with the sanitizers), far
#      less than the frame, with exit 130 (SIGINT) / 143 (SIGTERM), says
#      "interrupted after frame 0 of 1" and how to resume, summary.json says
#      "interrupted" with 0 frames completed, frame 1 is absent, frame 0 and
#      the checkpoint are whole and no temporary file is left.  Before this
#      stop existed the run would only have stopped at the end of the frame.
#   2. A medium run (quasistatic, 0.9 and 1.2 s a frame) stopped during its second
#      frame by SIGINT and by SIGTERM, then resumed: its frames are the
#      frames of an uninterrupted run byte for byte.
#   3. A second stop request (SIGINT and SIGTERM delivered together, the
#      process held by SIGSTOP meanwhile so they cannot merge into one) exits
#      at once with a message and the resume command; frame 0 and the
#      checkpoint stay whole, no temporary file is left.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_stop"
rm -rf "$T"; mkdir -p "$T"
R=("$DEFO" run --threads 1)
STOP_BOUND=5
[ "${DEFO_SANITIZE:-OFF}" = "ON" ] && STOP_BOUND=15

# a block pressed by a ball, one quasistatic solve per frame
scene() { # NAME CELLS TOLERANCE FPS
  cat > "$T/$1.json" <<JSON
{
  "name": "$1",
  "duration": {"frames": 2, "fps": $4},
  "integrator": {"type": "quasistatic", "tolerance": $3},
  "bodies": [
    {"name": "block",
     "generator": {"type": "box", "center": [0, 0, 0.1], "size": [0.4, 0.4, 0.2], "cells": $2},
     "material": {"model": "neo_hookean", "youngs": 1e4, "poisson": 0.4, "density": 1000,
                  "inversion": {"mode": "c1", "threshold": 0.3}},
     "fixed": [{"plane": {"point": [0, 0, 0], "normal": [0, 0, 1]}}]}
  ],
  "colliders": [
    {"name": "ball", "type": "sphere", "center": [0, 0, 0.3], "radius": 0.1,
     "motion": {"velocity": [0, 0, -0.075]}}
  ],
  "outputs": {"surface_obj": false}
}
JSON
}
scene long "[40, 40, 20]" 1e-7 1
scene medium "[24, 24, 12]" 1e-5 2

now() { date +%s.%N; }
# wait until FILE exists (the run reached that point), at most 600 s
wait_for() {
  for _ in $(seq 1 6000); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}
# wait until stats.jsonl has N lines
wait_lines() {
  for _ in $(seq 1 6000); do
    [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0; sleep 0.05
  done
  return 1
}
no_tmp() { [ -z "$(find "$1" -name '*.tmp*')" ] && ok || bad "$2: temporary files left: $(find "$1" -name '*.tmp*')"; }
readable() { $py -c "import meshio,sys; meshio.read(sys.argv[1])" "$1" && ok || bad "$1 unreadable"; }

# 1. interrupted inside the long frame
for sig in INT TERM; do
  d="$T/long_$sig"
  "${R[@]}" "$T/long.json" -o "$d" --frames 1 > "$d.out" 2> "$d.err" &
  pid=$!
  # the checkpoint of frame 0 is the last file before frame 1 begins
  wait_for "$d/checkpoint.bin" || bad "$sig: the long run never wrote frame 0"
  sleep 1
  t0=$(now)
  kill -$sig $pid
  wait $pid; rc=$?
  took=$($py -c "print(f'{$(now) - $t0:.2f}')")
  want=130; [ $sig = TERM ] && want=143
  [ "$rc" = $want ] && ok || bad "$sig: exit $rc (want $want): $(tail -3 "$d.err")"
  $py -c "import sys; sys.exit(0 if $took <= $STOP_BOUND else 1)" && ok \
    || bad "$sig: stopped after $took s (bound $STOP_BOUND s)"
  echo "long frame, SIG$sig 1 s into frame 1: exit $rc after $took s"
  grep -q "stop requested" "$d.err" && ok || bad "$sig: the request was not acknowledged"
  grep -q "interrupted after frame 0 of 1 (SIG$sig)" "$d.err" && ok || bad "$sig: no 'interrupted after frame 0 of 1': $(tail -3 "$d.err")"
  grep -q -- "continue with: defo run --resume $d --frames 1" "$d.err" && ok || bad "$sig: no resume command"
  $py - "$d/summary.json" <<'PY' && ok || bad "$sig: summary.json: $(cat "$d/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "interrupted" and s["frames_completed"] == 0, s
PY
  [ ! -e "$d/frames/frame_0001.vtu" ] && ok || bad "$sig: frame 1 written"
  readable "$d/frames/frame_0000.vtu"
  no_tmp "$d" "$sig"
done

# 2. stopped during frame 2 of the medium run, then resumed == uninterrupted
"${R[@]}" "$T/medium.json" -o "$T/medium_ref" --frames 2 --quiet > /dev/null 2>&1 || bad "medium reference run failed"
for sig in INT TERM; do
  d="$T/medium_$sig"
  "${R[@]}" "$T/medium.json" -o "$d" --frames 2 > "$d.out" 2> "$d.err" &
  pid=$!
  wait_lines "$d/stats.jsonl" 2 || bad "$sig: the medium run never finished frame 1"
  sleep 0.2
  kill -$sig $pid
  wait $pid; rc=$?
  want=130; [ $sig = TERM ] && want=143
  [ "$rc" = $want ] && ok || bad "medium $sig: exit $rc (want $want): $(tail -3 "$d.err")"
  done_frames=$(sed -n 's/.*interrupted after frame \([0-9]*\) of.*/\1/p' "$d.err")
  [ -n "$done_frames" ] && [ "$done_frames" -ge 1 ] && [ "$done_frames" -lt 2 ] && ok \
    || bad "medium $sig: stopped after '$done_frames' frames: $(tail -3 "$d.err")"
  grep -q '"status": "interrupted"' "$d/summary.json" && ok || bad "medium $sig: summary status"
  no_tmp "$d" "medium $sig"
  "${R[@]}" --resume "$d" --frames 2 --quiet > "$d.resume" 2>&1 || bad "medium $sig: resume failed: $(cat "$d.resume")"
  for k in 0001 0002; do
    cmp -s "$T/medium_ref/frames/frame_$k.vtu" "$d/frames/frame_$k.vtu" && ok \
      || bad "medium $sig: frame $k after the stop and --resume differs from the uninterrupted run"
  done
  grep -q '"status": "completed"' "$d/summary.json" && ok || bad "medium $sig: resumed summary status"
done

# 3. a second request exits at once
d="$T/twice"
"${R[@]}" "$T/long.json" -o "$d" --frames 1 > "$d.out" 2> "$d.err" &
pid=$!
wait_for "$d/checkpoint.bin" || bad "twice: the long run never wrote frame 0"
sleep 1
t0=$(now)
kill -STOP $pid; kill -INT $pid; kill -TERM $pid; kill -CONT $pid
wait $pid; rc=$?
took=$($py -c "print(f'{$(now) - $t0:.2f}')")
echo "long frame, two stop requests at once: exit $rc after $took s"
[ "$rc" = 130 ] || [ "$rc" = 143 ] && ok || bad "twice: exit $rc (want 130 or 143): $(tail -3 "$d.err")"
$py -c "import sys; sys.exit(0 if $took <= $STOP_BOUND else 1)" && ok || bad "twice: took $took s"
grep -q "second stop request: exiting now" "$d.err" && ok || bad "twice: no message: $(tail -3 "$d.err")"
grep -q -- "continue with: defo run --resume $d --frames 1" "$d.err" && ok || bad "twice: no resume command"
! grep -q "interrupted after frame" "$d.err" && ok || bad "twice: took the slow way out"
[ ! -e "$d/frames/frame_0001.vtu" ] && ok || bad "twice: frame 1 written"
readable "$d/frames/frame_0000.vtu"
no_tmp "$d" "twice"
# the checkpoint is whole: a resume loads it (and is stopped in its frame)
"${R[@]}" --resume "$d" --frames 1 > "$d.out2" 2> "$d.err2" &
pid=$!
for _ in $(seq 1 6000); do grep -q "resuming" "$d.err2" && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
wait $pid; rc=$?
[ "$rc" = 130 ] && grep -q "interrupted after frame 0 of 1" "$d.err2" && ok \
  || bad "twice: resume from its checkpoint: exit $rc: $(tail -3 "$d.err2")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
