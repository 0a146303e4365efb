#!/usr/bin/env bash
# What `defo run` says before the first frame (issue 14 parts 3 and 5):
#   1. a frame that needs many steps is announced with its count — the count
#      the frame then takes (stats.jsonl "substeps") — and what would lower
#      it: a stiff brick (E = 1e11) under newmark is bound by the explicit
#      stability limit (implicit integrator, softer material, coarser mesh);
#      backward Euler with a tiny time_step names the time_step; the demo
#      (8 steps a frame) and a quasistatic scene say nothing of the kind.
#   2. a body that starts inside a collider is reported before the first
#      frame — body, collider, nodes inside, how deep, how it is pushed out —
#      even with --quiet, and the run goes on (exit 0); a body resting on the
#      collider is not reported.  (The energy of the push-out:
#      tests/test_penetration.c.)
#   3. a solve cut short of its tolerance is said once and counted;
#   4. so is a rigid contact solve that ran out of sweeps.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
T="$DEFO_TMP/cli_run_notices"
rm -rf "$T"; mkdir -p "$T"
R=("$DEFO" run --threads 1)

# 1. steps a frame
brick() { # NAME YOUNGS INTEGRATOR
  cat > "$T/$1.json" <<JSON
{
  "name": "$1",
  "duration": {"frames": 1, "fps": 30},
  "integrator": $3,
  "bodies": [
    {"name": "brick", "generator": {"type": "box", "center": [0, 0, 0.5], "size": [0.2, 0.2, 0.2],
                                    "cells": [2, 2, 2]},
     "material": {"youngs": $2}}
  ],
  "outputs": {"vtu": false, "surface_obj": false}
}
JSON
}
brick stiff 1e11 '{"type": "newmark"}'
brick tiny_step 1e5 '{"type": "backward_euler", "time_step": 1e-4}'
brick soft 1e5 '{"type": "newmark"}'
brick qs 1e5 '{"type": "quasistatic"}'

"${R[@]}" "$T/stiff.json" -o "$T/stiff" > "$T/stiff.out" 2> "$T/stiff.err" || bad "stiff run failed: $(cat "$T/stiff.err")"
said=$(sed -n 's/.*integrator newmark takes \([0-9]*\) steps a frame.*/\1/p' "$T/stiff.err")
took=$(sed -n 's/.*"frame": 1,.*"substeps": \([0-9]*\),.*/\1/p' "$T/stiff/stats.jsonl")
echo "E = 1e11 brick: announced '$said' steps a frame, took '$took'"
[ -n "$said" ] && [ "$said" = "$took" ] && [ "$said" -ge 1000 ] && ok || bad "stiff: announced '$said', took '$took': $(cat "$T/stiff.err")"
grep -q "explicit stability bound" "$T/stiff.err" && grep -q "backward_euler" "$T/stiff.err" \
  && grep -q "lower youngs" "$T/stiff.err" && grep -q "coarser mesh" "$T/stiff.err" && ok \
  || bad "stiff: no hint: $(cat "$T/stiff.err")"
# before the first frame
[ "$(grep -n 'steps a frame' "$T/stiff.err" | cut -d: -f1)" -lt "$(grep -n '^frame 1/1' "$T/stiff.err" | cut -d: -f1)" ] \
  && ok || bad "stiff: the notice comes after the first frame: $(cat "$T/stiff.err")"
# --quiet keeps quiet
"${R[@]}" "$T/stiff.json" -o "$T/stiff_q" --quiet > /dev/null 2> "$T/stiff_q.err" && [ ! -s "$T/stiff_q.err" ] \
  && ok || bad "stiff --quiet: $(cat "$T/stiff_q.err")"

"${R[@]}" "$T/tiny_step.json" -o "$T/tiny_step" > /dev/null 2> "$T/tiny_step.err" || bad "tiny_step run failed: $(cat "$T/tiny_step.err")"
grep -q "integrator backward_euler takes 334 steps a frame .*raise its time_step" "$T/tiny_step.err" \
  && ok || bad "tiny_step: $(cat "$T/tiny_step.err")"
for s in soft qs; do
  "${R[@]}" "$T/$s.json" -o "$T/$s" > /dev/null 2> "$T/$s.err" || bad "$s run failed: $(cat "$T/$s.err")"
  ! grep -q "steps a frame" "$T/$s.err" && ok || bad "$s: a notice nobody needs: $(cat "$T/$s.err")"
done
"${R[@]}" --frames 1 -o "$T/demo" > /dev/null 2> "$T/demo.err" || bad "demo failed"
! grep -q "steps a frame" "$T/demo.err" && ok || bad "demo: $(cat "$T/demo.err")"

# 2. a block 70 % inside the ground (its nodes: 7 layers of 49, 5 below z = 0)
block() { # NAME BOTTOM INTEGRATOR
  cat > "$T/$1.json" <<JSON
{
  "name": "$1",
  "duration": {"frames": 2, "fps": 30},
  "integrator": {"type": "$3"},
  "bodies": [
    {"name": "cube", "generator": {"type": "box", "center": [0, 0, $(awk "BEGIN {print $2 + 0.5}")],
                                   "size": [1, 1, 1], "cells": [6, 6, 6]}}
  ],
  "colliders": [{"name": "floor", "type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}],
  "outputs": {"vtu": false, "surface_obj": false}
}
JSON
}
block inside -0.7 newmark
block inside_qs -0.7 quasistatic
block resting 0 newmark
"${R[@]}" "$T/inside.json" -o "$T/inside" --quiet > /dev/null 2> "$T/inside.err" && ok || bad "inside run failed: $(cat "$T/inside.err")"
grep -q "^defo run: warning: bodies\[0\] 'cube' starts inside colliders\[0\] 'floor': 245 of 343 nodes, up to 0.7 m deep; they are pushed out at no more than 0.5 m/s" "$T/inside.err" \
  && ok || bad "inside: $(cat "$T/inside.err")"
[ "$(wc -l < "$T/inside.err")" = 1 ] && ok || bad "inside: more than the warning: $(cat "$T/inside.err")"
"${R[@]}" "$T/inside_qs.json" -o "$T/inside_qs" --quiet > /dev/null 2> "$T/inside_qs.err" && ok || bad "inside_qs run failed"
grep -q "'cube' starts inside colliders\[0\] 'floor': 245 of 343 nodes, up to 0.7 m deep; penalty contact pushes them out" "$T/inside_qs.err" \
  && ok || bad "inside_qs: $(cat "$T/inside_qs.err")"
"${R[@]}" "$T/resting.json" -o "$T/resting" --quiet > /dev/null 2> "$T/resting.err" && [ ! -s "$T/resting.err" ] \
  && ok || bad "resting: $(cat "$T/resting.err")"

# 3. a Newton solve cut by max_iterations far from its tolerance is said
#    (once, even with --quiet) and counted in stats.jsonl's not_converged;
#    with enough iterations nothing is said
cat > "$T/cap.json" <<'JSON'
{"name": "capped", "duration": {"frames": 2, "fps": 10},
 "integrator": {"type": "quasistatic", "max_iterations": 2},
 "bodies": [{"name": "block", "generator": {"type": "box", "center": [0, 0, 0.1], "size": [0.4, 0.4, 0.2], "cells": [6, 6, 3]},
   "material": {"model": "neo_hookean", "youngs": 1e4, "poisson": 0.4},
   "fixed": [{"plane": {"point": [0, 0, 0], "normal": [0, 0, 1]}}]}],
 "colliders": [{"type": "sphere", "center": [0, 0, 0.3], "radius": 0.1, "motion": {"velocity": [0, 0, -0.3]}}],
 "outputs": {"vtu": false, "surface_obj": false}}
JSON
"${R[@]}" "$T/cap.json" -o "$T/cap" --quiet > /dev/null 2> "$T/cap.err" && ok || bad "capped run failed: $(cat "$T/cap.err")"
[ "$(grep -c "stopped short of their tolerance" "$T/cap.err")" = 1 ] && grep -q "max_iterations" "$T/cap.err" \
  && ok || bad "capped Newton not said once: $(cat "$T/cap.err")"
grep -q '"not_converged": [1-9]' "$T/cap/stats.jsonl" && ok || bad "not_converged not counted: $(head -c 400 "$T/cap/stats.jsonl")"
sed 's/"max_iterations": 2/"max_iterations": 100/' "$T/cap.json" > "$T/free.json"
"${R[@]}" "$T/free.json" -o "$T/free" --quiet > /dev/null 2> "$T/free.err" && [ ! -s "$T/free.err" ] \
  && grep -q '"not_converged": 0' "$T/free/stats.jsonl" && ok || bad "converged run: $(cat "$T/free.err")"

# 4. a rigid pile whose contact solves run out of sweeps: the world step
#    returns no warning for it (a settling pile reaches the cap often), but
#    the run still says it once and counts it in not_converged
"${R[@]}" "$DEFO_SRC/examples/scenes/rigid_pile.json" -o "$T/pile" --frames 3 --quiet > /dev/null \
  2> "$T/pile.err" && ok || bad "rigid pile failed: $(cat "$T/pile.err")"
if grep -q '"not_converged": [1-9]' "$T/pile/stats.jsonl"; then
  [ "$(grep -c "stopped short of their tolerance" "$T/pile.err")" = 1 ] && ok \
    || bad "rigid pile's capped contact solves not said once: $(cat "$T/pile.err")"
else
  [ ! -s "$T/pile.err" ] && ok || bad "rigid pile converged but warned: $(cat "$T/pile.err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
