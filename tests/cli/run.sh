#!/usr/bin/env bash
# CLI contract for `defo run` (docs/architecture.md "The command line", issue 7):
#   - the built-in demo (no files) writes scene.pvd, frames/*.vtu,
#     surface/*.obj, png/*.png of the asked size, stats.jsonl with the
#     documented keys, summary.json and a scene copy;
#   - meshio reads the .vtu frames with the documented point and cell fields
#     and the .pvd lists every frame with its time;
#   - run --frames 2 then --resume to 5 gives the same .vtu/.obj files, byte
#     for byte, as an uninterrupted run to 5; so does a run stopped by SIGINT
#     and resumed (and the interrupted run says how far it got);
#   - every error path exits 2 with one line and creates no output folder;
#     a non-finite step exits 1 naming body and element, earlier frames valid;
#   - every example scene in examples/scenes runs for 2 frames.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_run"
rm -rf "$T"; mkdir -p "$T"
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }
# one line on stderr, exit 2, and no output folder
expect_bad() {
  local dir=$1; shift
  "$@" > "$T/out" 2> "$T/err"; local got=$?
  [ "$got" = 2 ] && ok || bad "'$*' exit $got (want 2): $(head -3 "$T/err")"
  [ "$(wc -l < "$T/err")" = 1 ] && ok || bad "'$*' stderr is not one line: $(cat "$T/err")"
  if [ -n "$dir" ]; then [ ! -e "$dir" ] && ok || bad "'$*' created $dir"; fi
}
R=("$DEFO" run --threads 1)

# 1. the built-in demo, 2 frames
if "${R[@]}" --frames 2 -o "$T/demo" > "$T/demo.out" 2> "$T/demo.err"; then ok; else bad "demo exit $?: $(tail -3 "$T/demo.err")"; fi
for f in scene.pvd scene.json stats.jsonl summary.json checkpoint.bin frames/frame_0000.vtu \
         frames/frame_0002.vtu surface/frame_0002.obj png/frame_0002.png; do
  [ -s "$T/demo/$f" ] && ok || bad "demo: missing $f"
done
[ -z "$(find "$T/demo" -name '*.tmp*')" ] && ok || bad "temporary files left: $(find "$T/demo" -name '*.tmp*')"
grep -q "outputs in $T/demo" "$T/demo.out" && ok || bad "demo does not say where its outputs are"
[ "$(png_size "$T/demo/png/frame_0001.png")" = "480x360" ] && ok || bad "demo png size $(png_size "$T/demo/png/frame_0001.png")"
[ "$(wc -l < "$T/demo.err")" -ge 3 ] && ok || bad "no per-frame progress lines off a terminal"
# the pictures of a run and `defo render` of its folder (single frames, sheets
# and videos share one range rule) colour J alike: the legend's text and bar
# (opaque pixels: ink and colour bar) are the same pixels in both
"$DEFO" render "$T/demo" --frame 2 --size 480x360 -o "$T/demo_r2.png" > "$T/demo_r2.log" 2>&1 \
  && grep -q "J in \[0, 2\]" "$T/demo_r2.log" && ok || bad "render of the demo folder: $(cat "$T/demo_r2.log")"
$py - "$T/demo/png/frame_0002.png" "$T/demo_r2.png" <<'PY' && ok || bad "run picture and defo render legends differ"
import sys, zlib, struct
def png_rgb(path):
    data = open(path, "rb").read()
    w, h = struct.unpack(">II", data[16:24])
    idat, i = b"", 8
    while i < len(data):
        n, = struct.unpack(">I", data[i:i + 4])
        if data[i + 4:i + 8] == b"IDAT": idat += data[i + 8:i + 8 + n]
        i += 12 + n
    raw, rows, prev, k = zlib.decompress(idat), [], bytearray(3 * w), 0
    for y in range(h):
        f = raw[k]; line = bytearray(raw[k + 1:k + 1 + 3 * w]); k += 1 + 3 * w
        for x in range(3 * w):
            a = line[x - 3] if x >= 3 else 0; b = prev[x]; c = prev[x - 3] if x >= 3 else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    return w, rows
(w, a), (_, b) = png_rgb(sys.argv[1]), png_rgb(sys.argv[2])
ink = lambda p: p == (25, 25, 30)
# the legend panel: the right 110 columns, top 200 rows; ink = label text
diff = n = 0
for y in range(200):
    for x in range(w - 110, w):
        pa = tuple(a[y][3 * x:3 * x + 3]); pb = tuple(b[y][3 * x:3 * x + 3])
        if ink(pa) or ink(pb):
            n += 1; diff += pa != pb
print("legend ink pixels %d, differing %d" % (n, diff))
assert n > 50 and diff == 0
PY
# messages: one body is "1 body"; 2 frames at 30 fps are 0.0667 s, not "0.1 s"
grep -q "^defo run: .*: 1 body (" "$T/demo.err" && ok || bad "body count message: $(head -1 "$T/demo.err")"
grep -q "2 frames (0.0667 s simulated)" "$T/demo.out" && ok || bad "simulated time: $(head -1 "$T/demo.out")"
grep -q "t = 0.0667 s" "$T/demo.err" && ok || bad "progress time: $(cat "$T/demo.err")"

# 2. meshio reads frames and the .pvd; stats.jsonl keys; summary
$py - "$T/demo" <<'PY' && ok || bad "meshio / stats / summary checks"
import sys, json, os, meshio, numpy as np
import xml.etree.ElementTree as ET
d = sys.argv[1]
m = meshio.read(os.path.join(d, "frames/frame_0002.vtu"))
for k in ("displacement", "velocity"):
    assert k in m.point_data and m.point_data[k].shape == (len(m.points), 3), k
for k in ("J", "inverted", "von_mises", "max_principal_stress", "plastic_strain", "body_id"):
    assert k in m.cell_data, (k, list(m.cell_data))
    assert np.all(np.isfinite(m.cell_data[k][0])), k
assert m.cells[0].type == "tetra"
# the torus is falling: displacement is -z, J close to 1 before impact
assert m.point_data["displacement"][:, 2].max() < 0
assert abs(m.cell_data["J"][0] - 1).max() < 1e-3
pvd = ET.parse(os.path.join(d, "scene.pvd")).getroot()
ds = pvd.findall(".//DataSet")
assert len(ds) == 3, len(ds)
for i, e in enumerate(ds):
    assert abs(float(e.get("timestep")) - i / 30) < 1e-12
    assert os.path.exists(os.path.join(d, e.get("file")))
lines = open(os.path.join(d, "stats.jsonl")).read().splitlines()
assert len(lines) == 3
for i, l in enumerate(lines):
    s = json.loads(l)
    for k in ("frame", "time", "wall_ms", "substeps", "newton_iters", "cg_iters", "residual",
              "inverted", "folded", "min_J", "kinetic_energy", "elastic_energy", "bodies",
              "yielding", "unpatched"):
        assert k in s, k
    assert s["frame"] == i
    b = s["bodies"][0]
    assert b["name"] == "torus" and "inverted" in b and abs(b["volume_ratio"] - 1) < 1e-3
    assert s["folded"] == b["folded"] == 0
sm = json.load(open(os.path.join(d, "summary.json")))
assert sm["status"] == "completed" and sm["frames_completed"] == 2, sm
assert "peak_inverted" in sm and sm["final"]["inverted"] == 0
PY

# 3. resume: --frames 2 then --resume to 5 == uninterrupted 5 (byte for byte)
cat > "$T/small.json" <<'JSON'
{"name": "small", "duration": {"frames": 5, "fps": 30},
 "bodies": [{"name": "ball", "generator": {"type": "sphere", "radius": 0.2, "center": [0, 0, 0.22],
   "cell_size": 0.08}, "velocity": [0.5, 0, -1],
   "material": {"model": "neo_hookean", "youngs": 2e4, "damping": 0.01},
   "material_changes": [{"time": 0.05, "material": {"youngs": 4e4}}]}],
 "colliders": [{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1], "friction": 0.4}],
 "outputs": {"png": false}}
JSON
"${R[@]}" "$T/small.json" -o "$T/full" --quiet > "$T/o1" 2>&1 || bad "small run failed: $(cat "$T/o1")"
[ ! -s "$T/o1" ] && ok || bad "--quiet printed: $(cat "$T/o1")"
"${R[@]}" "$T/small.json" -o "$T/part" --frames 2 --quiet > /dev/null 2>&1 || bad "partial run failed"
[ ! -e "$T/part/frames/frame_0003.vtu" ] && ok || bad "--frames 2 wrote frame 3"
"${R[@]}" --resume "$T/part" --quiet > "$T/o2" 2>&1 || bad "resume failed: $(cat "$T/o2")"
for k in 0000 0001 0002 0003 0004 0005; do
  cmp -s "$T/full/frames/frame_$k.vtu" "$T/part/frames/frame_$k.vtu" && ok || bad "resumed frame $k.vtu differs"
  cmp -s "$T/full/surface/frame_$k.obj" "$T/part/surface/frame_$k.obj" && ok || bad "resumed frame $k.obj differs"
done
cmp -s "$T/full/scene.pvd" "$T/part/scene.pvd" && ok || bad "resumed scene.pvd differs"
[ "$(wc -l < "$T/part/stats.jsonl")" = 6 ] && ok || bad "resumed stats.jsonl has $(wc -l < "$T/part/stats.jsonl") lines"
"${R[@]}" --resume "$T/part" > "$T/o3" 2>&1 && grep -q "nothing to do" "$T/o3" && ok || bad "resume of a finished run: $(cat "$T/o3")"

# 3a. one folder, one run: a second run of ANOTHER scene into a folder holding
#     frames is refused (exit 2, one line, nothing removed); with --force the
#     files defo wrote go first (frames 3..5 of the old run do not sit beside
#     the new run's 0..2) and other files stay; a run of the SAME scene into
#     its folder continues it, to the frames an uninterrupted run writes.
"${R[@]}" "$T/small.json" -o "$T/fold" --quiet > /dev/null 2>&1 || bad "fold: first run"
echo "my notes" > "$T/fold/notes.txt"
sed 's/"youngs": 2e4/"youngs": 3e4/' "$T/small.json" > "$T/small_b.json"
expect_bad "" "${R[@]}" "$T/small_b.json" -o "$T/fold" --frames 2
grep -q "is not empty.*--force" "$T/err" && ok || bad "refusal message: $(cat "$T/err")"
[ -e "$T/fold/frames/frame_0005.vtu" ] && ok || bad "a refused run removed files"
"${R[@]}" "$T/small_b.json" -o "$T/fold" --frames 2 --force > /dev/null 2> "$T/force.err" \
  && ok || bad "--force run: $(cat "$T/force.err")"
grep -q "removed [0-9]* files of an earlier run" "$T/force.err" && ok || bad "--force message: $(cat "$T/force.err")"
[ "$(ls "$T/fold/frames" | tr '\n' ' ')" = "frame_0000.vtu frame_0001.vtu frame_0002.vtu " ] \
  && ok || bad "frames after --force: $(ls "$T/fold/frames")"
[ "$(ls "$T/fold/surface" | wc -l)" = 3 ] && [ "$(wc -l < "$T/fold/stats.jsonl")" = 3 ] \
  && ok || bad "surface/stats after --force"
[ "$(cat "$T/fold/notes.txt")" = "my notes" ] && ok || bad "--force removed a file defo did not write"
mkdir -p "$T/userdir"; echo x > "$T/userdir/keep.txt"
expect_bad "" "${R[@]}" "$T/small.json" -o "$T/userdir"
expect_bad "" "${R[@]}" --resume "$T/fold" --force
"${R[@]}" "$T/small.json" -o "$T/same" --frames 2 --quiet > /dev/null 2>&1 || bad "same: first run"
"${R[@]}" "$T/small.json" -o "$T/same" > /dev/null 2> "$T/same.err" || bad "same: second run: $(cat "$T/same.err")"
grep -q "holds a run of this scene: continuing it" "$T/same.err" && ok || bad "same scene not continued: $(cat "$T/same.err")"
for k in 0002 0003 0005; do
  cmp -s "$T/full/frames/frame_$k.vtu" "$T/same/frames/frame_$k.vtu" && ok || bad "continued frame $k differs"
done

# 3b. resume with backward Euler's carried-over state: a lagged two-level
#     preconditioner and lazy rotations (MTPS08 §4.4) are rebuilt at every
#     frame start, so a resumed run takes the same steps (byte-identical)
cat > "$T/lazy.json" <<'JSON'
{"name": "lazy", "duration": {"frames": 4, "fps": 30},
 "integrator": {"type": "backward_euler", "time_step": 0.01, "precond": "two_level",
                "rotation_interval": 0, "lazy_tolerance": 0.02},
 "bodies": [{"name": "beam", "formulation": "corotated",
   "generator": {"type": "box", "size": [1, 0.2, 0.2], "center": [0.5, 0, 0.5], "cells": [10, 2, 2]},
   "material": {"model": "corotated", "youngs": 1e5, "poisson": 0.3, "density": 1000},
   "fixed": [{"box": {"min": [-0.01, -1, -1], "max": [0.001, 1, 1]}}]}],
 "outputs": {"png": false}}
JSON
"${R[@]}" "$T/lazy.json" -o "$T/lazy_full" --quiet > "$T/o4" 2>&1 || bad "lazy run failed: $(cat "$T/o4")"
"${R[@]}" "$T/lazy.json" -o "$T/lazy_part" --frames 2 --quiet > /dev/null 2>&1 || bad "lazy partial run failed"
"${R[@]}" --resume "$T/lazy_part" --quiet > "$T/o5" 2>&1 || bad "lazy resume failed: $(cat "$T/o5")"
for k in 0001 0002 0003 0004; do
  cmp -s "$T/lazy_full/frames/frame_$k.vtu" "$T/lazy_part/frames/frame_$k.vtu" && ok || bad "lazy resumed frame $k.vtu differs"
done
# the beam sags under gravity (the run did something)
$py -c "
import meshio
m = meshio.read('$T/lazy_full/frames/frame_0004.vtu')
assert m.point_data['displacement'][:, 2].min() < -1e-3
" && ok || bad "lazy beam did not sag"

# 4. Ctrl-C: stop after a frame, say how far, resume to the same frames
"${R[@]}" "$T/small.json" -o "$T/int" --frames 100000 > "$T/int.out" 2> "$T/int.err" &
pid=$!
for i in $(seq 1 600); do
  [ -f "$T/int/stats.jsonl" ] && [ "$(wc -l < "$T/int/stats.jsonl")" -ge 4 ] && break
  sleep 0.05
done
kill -INT $pid
wait $pid; rc=$?
[ "$rc" = 130 ] && ok || bad "interrupted run exit $rc: $(tail -2 "$T/int.err")"
done_frames=$(sed -n 's/.*interrupted after frame \([0-9]*\) of.*/\1/p' "$T/int.err")
[ -n "$done_frames" ] && ok || bad "no 'interrupted after frame' line: $(tail -3 "$T/int.err")"
grep -q -- "--resume $T/int" "$T/int.err" && ok || bad "no resume hint"
if [ -n "$done_frames" ]; then
  last=$(printf "%04d" "$done_frames")
  [ -s "$T/int/frames/frame_$last.vtu" ] && ok || bad "last completed frame $last missing"
  $py -c "import meshio,sys; meshio.read(sys.argv[1])" "$T/int/frames/frame_$last.vtu" && ok || bad "frame $last unreadable"
  grep -q '"status": "interrupted"' "$T/int/summary.json" && ok || bad "summary status"
  to=$((done_frames + 2))
  "${R[@]}" --resume "$T/int" --frames $to --quiet > /dev/null 2>&1 || bad "resume after SIGINT failed"
  "${R[@]}" "$T/small.json" -o "$T/ref" --frames $to --quiet > /dev/null 2>&1 || bad "reference run failed"
  k=$(printf "%04d" $to)
  cmp -s "$T/ref/frames/frame_$k.vtu" "$T/int/frames/frame_$k.vtu" && ok || bad "frame $k after SIGINT+resume differs"
fi

# 5. error paths: exit 2, one line, no output folder
printf '{"bodies": [{"generator": {"type": "box"}, "material": {"poisson": 0.52}}, {"mesh": "nope.vtu"}]}' > "$T/bad.json"
expect_bad "$T/o_bad" "${R[@]}" "$T/bad.json" -o "$T/o_bad"
grep -q "poisson: 0.52 is not in \[0, 0.5)" "$T/err" && grep -q "1 more error" "$T/err" && ok || bad "bad scene line: $(cat "$T/err")"
printf '{"bodies": [{"generator": {"type": "box"}, "fixed": [{"sphere": {"center": [9, 9, 9], "radius": 0.1}}]}]}' > "$T/nofix.json"
expect_bad "$T/o_nofix" "${R[@]}" "$T/nofix.json" -o "$T/o_nofix"
expect_bad "$T/o_missing" "${R[@]}" "$T/missing.json" -o "$T/o_missing"
expect_bad "$T/o_f" "${R[@]}" "$T/small.json" -o "$T/o_f" --frames 0
expect_bad "$T/o_f" "${R[@]}" "$T/small.json" -o "$T/o_f" --frames abc
expect_bad "$T/o_f" "${R[@]}" "$T/small.json" -o "$T/o_f" --threads 0
expect_bad "$T/o_f" "${R[@]}" "$T/small.json" -o "$T/o_f" --bogus
expect_bad "$T/o_f" "${R[@]}" "$T/small.json" "$T/small.json" -o "$T/o_f"
expect_bad "" "${R[@]}" --resume "$T/nonexistent"
mkdir -p "$T/empty"
expect_bad "" "${R[@]}" "$T/small.json" --resume "$T/empty"
# a checkpoint of another scene is refused
expect_bad "" "${R[@]}" "$T/nofix.json" --resume "$T/full" 2>/dev/null
sed 's/"youngs": 2e4/"youngs": 3e4/' "$T/small.json" > "$T/other.json"
expect_bad "" "${R[@]}" "$T/other.json" --resume "$T/part"
grep -q "different scene" "$T/err" && ok || bad "mismatched checkpoint: $(cat "$T/err")"
# a damaged checkpoint is refused
cp -r "$T/part" "$T/dmg"; printf 'X' | dd of="$T/dmg/checkpoint.bin" bs=1 seek=60 conv=notrunc 2>/dev/null
expect_bad "" "${R[@]}" --resume "$T/dmg" --frames 9
grep -q "checksum" "$T/err" && ok || bad "damaged checkpoint: $(cat "$T/err")"

# 6. a step that would produce a non-finite state: exit 1, one line naming the
#    body and element, the frames before it stay valid, summary says failed
printf '{"duration": {"frames": 3}, "bodies": [{"name": "rocket", "generator": {"type": "box", "cells": 1}, "velocity": [1e300, 0, 0], "angular_velocity": [0, 0, 1e300]}], "outputs": {"png": false}}' > "$T/nan.json"
"${R[@]}" "$T/nan.json" -o "$T/nan" > "$T/out" 2> "$T/err"; rc=$?
[ "$rc" = 1 ] && ok || bad "non-finite step exit $rc (want 1)"
grep -q "^defo run: frame 1: body 'rocket': element [0-9]*: non-finite" "$T/err" && ok || bad "non-finite step message: $(cat "$T/err")"
[ "$(grep -c '^defo run: frame' "$T/err")" = 1 ] && ok || bad "non-finite step: not one line"
$py -c "import meshio,sys; meshio.read(sys.argv[1])" "$T/nan/frames/frame_0000.vtu" && ok || bad "frame 0 unreadable after a failed step"
grep -q '"status": "failed"' "$T/nan/summary.json" && ok || bad "summary status after a failed step"
# too stiff for explicit steps: refused before anything is written
printf '{"bodies": [{"generator": {"type": "box"}, "material": {"youngs": 1e30}}]}' > "$T/stiff.json"
expect_bad "$T/o_stiff" "${R[@]}" "$T/stiff.json" -o "$T/o_stiff"

# 7. every example scene, 2 frames (1 under the sanitizers, ~20x slower)
fr=2; [ "${DEFO_SANITIZE:-OFF}" = ON ] && fr=1
for s in "$DEFO_SRC"/examples/scenes/*.json; do
  n=$(basename "$s" .json)
  if "${R[@]}" "$s" -o "$T/ex_$n" --frames $fr > "$T/ex_$n.log" 2>&1; then ok; else bad "example $n: $(tail -3 "$T/ex_$n.log")"; fi
  [ -s "$T/ex_$n/frames/frame_000$fr.vtu" ] && ok || bad "example $n: no frame $fr"
  [ "$(png_size "$T/ex_$n/png/frame_000$fr.png")" = "640x480" ] && ok || bad "example $n png size"
done

# The plastic_strain cell field carries MG04 §3's plastic strain norm: the
# wax bar (plasticity on a corotated body) yields under gravity within a few
# frames, so the field must be positive somewhere (it is 0 without plasticity).
"$DEFO" run "$DEFO_SRC/examples/scenes/wax_bar.json" -o "$T/wax" --frames 4 --threads 1 --quiet \
  && $py -c "
import meshio
m = meshio.read('$T/wax/frames/frame_0004.vtu')
p = m.cell_data['plastic_strain'][0]
assert p.max() > 1e-4, p.max()
" && ok || bad "plastic_strain field stays zero for a yielding body"

# The activation cell field is the level each element's fibre term used: the
# contracting muscle's smooth schedule (0 at t = 0, 1 at t = 1) at frame 2 of
# 20 fps, t = 0.1, is the smoothstep 3u² − 2u³ at u = 0.1, in every element;
# the wax bar above has no activation and writes 0.
"$DEFO" run "$DEFO_SRC/examples/scenes/muscle_contract.json" -o "$T/muscle" --frames 2 --threads 1 \
  --quiet && $py -c "
import meshio
m = meshio.read('$T/muscle/frames/frame_0002.vtu')
a = m.cell_data['activation'][0]
u = 0.1
assert abs(a - (3 * u * u - 2 * u ** 3)).max() < 1e-12, (a.min(), a.max())
w = meshio.read('$T/wax/frames/frame_0004.vtu').cell_data['activation'][0]
assert (w == 0).all(), w.max()
" && ok || bad "activation field is not the scheduled level"

# The plastic_bending cell field (shells, ITF04 §8): a sheet clamped along two
# rows of nodes hangs under its weight at equilibrium (quasistatic). Hanging,
# gravity runs along the sheet beyond the bend and carries no moment, so the
# plastic bending sits at the clamp and is 0 on the free half; without
# bending_yield the field is 0 everywhere.
cat > "$T/plate.json" <<'JSON'
{"name": "a plastic sheet clamped along one edge hangs under its weight",
 "duration": {"seconds": 0.1, "fps": 30}, "integrator": {"type": "quasistatic"},
 "bodies": [{"name": "sheet",
   "generator": {"type": "rectangle", "center": [0.2, 0, 0.5], "size": [0.4, 0.1], "cells": [16, 4]},
   "material": {"model": "corotated", "youngs": 1e6, "poisson": 0.3, "density": 1000, "thickness": 0.002},
   "plasticity": {"model": "mg04", "bending_yield": 0.0002, "bending_creep": 30},
   "fixed": [{"box": {"min": [-1, -1, -1], "max": [0.03, 1, 2]}}]}],
 "outputs": {"png": false}}
JSON
sed 's/"bending_yield": 0.0002, //' "$T/plate.json" > "$T/plate_elastic.json"
"$DEFO" run "$T/plate.json" -o "$T/plate" --threads 1 --quiet &&
  "$DEFO" run "$T/plate_elastic.json" -o "$T/plate_elastic" --threads 1 --quiet && $py -c "
import meshio
m = meshio.read('$T/plate/frames/frame_0003.vtu')
b = m.cell_data['plastic_bending'][0]
X = (m.points - m.point_data['displacement'])[m.cells[0].data].mean(axis=1)[:, 0]
assert m.point_data['displacement'][:, 2].min() < -0.3  # it hangs
assert b[X < 0.05].max() > 0.01, b[X < 0.05].max()       # bent plastically at the clamp
assert (b[X > 0.2] == 0).all(), b[X > 0.2].max()        # the free half carries no moment
e = meshio.read('$T/plate_elastic/frames/frame_0003.vtu').cell_data['plastic_bending'][0]
assert (e == 0).all(), e.max()
import json
st = [json.loads(l) for l in open('$T/plate/stats.jsonl')][1:]
se = [json.loads(l) for l in open('$T/plate_elastic/stats.jsonl')][1:]
assert sum(f['yielding'] for f in st) > 0 and all(f['unpatched'] == 0 for f in st)
assert sum(f['yielding'] for f in se) == 0                  # stats count the flow
" && ok || bad "plastic_bending field is not where the hanging sheet bends"

# "embedded" (MG04 §5.1): a box body carrying a small closed surface (an
# octahedron, partly outside the box) writes that surface, not the box's
# boundary, into surface/*.obj; at frame 0 it is the input surface transformed.
# A second body without one contributes its boundary.  A missing file is a
# validation error naming its JSON path.
E="$T/embed"; mkdir -p "$E"
cat > "$E/oct.obj" <<'OBJ'
v 0.6 0 0
v -0.6 0 0
v 0 0.6 0
v 0 -0.6 0
v 0 0 0.4
v 0 0 -0.4
f 1 3 5
f 3 2 5
f 2 4 5
f 4 1 5
f 3 1 6
f 2 3 6
f 4 2 6
f 1 4 6
OBJ
cat > "$E/scene.json" <<'JSON'
{"duration": {"frames": 2, "fps": 30},
 "integrator": {"type": "backward_euler"},
 "bodies": [
  {"name": "box", "generator": {"type": "box", "size": [1, 1, 1], "cells": 2},
   "formulation": "corotated", "embedded": {"file": "oct.obj"},
   "transform": {"scale": [2, 1, 1], "rotate": {"axis": [0, 0, 1], "angle_deg": 30},
                 "translate": [0, 0, 3]},
   "material": {"youngs": 1e5}},
  {"name": "plain", "generator": {"type": "box", "size": [1, 1, 1], "cells": 1,
   "center": [5, 0, 3]}, "formulation": "corotated"}
 ],
 "outputs": {"png": false}}
JSON
if "$DEFO" run "$E/scene.json" -o "$E/out" --frames 2 --threads 1 --quiet 2> "$E/err"; then
  $py - "$E" <<'PY' && ok || bad "embedded surface OBJ"
import sys, os, math
d = sys.argv[1]
def read(p):
    V, F = [], []
    for l in open(p):
        t = l.split()
        if t and t[0] == "v": V.append([float(x) for x in t[1:4]])
        if t and t[0] == "f": F.append([int(x.split("/")[0]) for x in t[1:4]])
    return V, F
src, srcf = read(os.path.join(d, "oct.obj"))
c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
want = []
for x, y, z in src:
    x *= 2
    want.append([c * x - s * y, s * x + c * y, z + 3])
# the plain 1-cell box's boundary: 8 nodes, 12 triangles
for k in (0, 1, 2):
    V, F = read(os.path.join(d, "out/surface/frame_%04d.obj" % k))
    assert len(V) == 6 + 8 and len(F) == 8 + 12, (k, len(V), len(F))
    assert F[:8] == srcf, F[:8]
    assert all(max(f) <= len(V) and min(f) >= 1 for f in F)
V, F = read(os.path.join(d, "out/surface/frame_0000.obj"))
scale = max(abs(v) for p in want for v in p)
for a, b in zip(V[:6], want):
    for i in range(3):
        assert abs(a[i] - b[i]) <= 1e-9 * scale, (a, b)
V2, _ = read(os.path.join(d, "out/surface/frame_0002.obj"))
assert V2[:6] != V[:6], "embedded surface does not move"
PY
else bad "embedded scene run exit: $(cat "$E/err")"; fi
# ... the .vtu holds both bodies, one after the other (meshio: points of both,
# body_id 0 then 1); the OBJ names each body as an object
$py - "$E" <<'PY' && ok || bad "two-body frame"
import sys, os, meshio, numpy as np
d = sys.argv[1]
m = meshio.read(os.path.join(d, "out/frames/frame_0002.vtu"))
ids = np.concatenate([c for c in m.cell_data["body_id"]])
assert len(m.points) == 27 + 8, len(m.points)
assert list(ids).count(0) == 48 and list(ids).count(1) == 6 and np.all(np.diff(ids) >= 0)
names = [l.split()[1] for l in open(os.path.join(d, "out/surface/frame_0002.obj")) if l.startswith("o ")]
assert names == ["box", "plain"], names
PY
# pictures draw the embedded surface, not the box: an icosphere of radius
# 0.3 at the centre of a 1 m box, bound to it, covers far fewer pixels than
# the box does
$py - "$E/ball.obj" <<'PY' || bad "cannot write the icosphere"
import sys, math
t = (1 + 5 ** 0.5) / 2
V = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
     (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
F = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
     (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5),
     (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
with open(sys.argv[1], "w") as f:
    for v in V:
        n = math.sqrt(sum(c * c for c in v))
        f.write("v %.17g %.17g %.17g\n" % (0.3 * v[0] / n, 0.3 * v[1] / n, 1 + 0.3 * v[2] / n))
    for a, b, c in F: f.write("f %d %d %d\n" % (a + 1, b + 1, c + 1))
PY
for kind in plain embedded; do
  emb=""; [ $kind = embedded ] && emb=', "embedded": {"file": "ball.obj"}'
  cat > "$E/pic_$kind.json" <<JSON
{"duration": {"frames": 1, "fps": 30}, "integrator": {"type": "backward_euler"},
 "bodies": [{"name": "b", "generator": {"type": "box", "size": [1, 1, 1], "cells": 2,
   "center": [0, 0, 1]}, "formulation": "corotated"$emb}],
 "outputs": {"png": {"enabled": true, "color": "", "width": 320, "height": 240}, "vtu": false}}
JSON
  "$DEFO" run "$E/pic_$kind.json" -o "$E/pic_$kind" --threads 1 --quiet 2> "$E/pic.err" || bad "picture run $kind: $(cat "$E/pic.err")"
done
$py - "$E/pic_plain/png/frame_0001.png" "$E/pic_embedded/png/frame_0001.png" <<'PY' && ok || bad "embedded body pictured as its box"
import sys, zlib, struct
def png_rgb(path):
    data = open(path, "rb").read()
    w, h = struct.unpack(">II", data[16:24])
    idat, i = b"", 8
    while i < len(data):
        n, = struct.unpack(">I", data[i:i + 4]); t = data[i + 4:i + 8]
        if t == b"IDAT": idat += data[i + 8:i + 8 + n]
        i += 12 + n
    raw, rows, prev, k = zlib.decompress(idat), [], bytearray(3 * w), 0
    for y in range(h):
        f = raw[k]; line = bytearray(raw[k + 1:k + 1 + 3 * w]); k += 1 + 3 * w
        for x in range(3 * w):
            a = line[x - 3] if x >= 3 else 0; b = prev[x]; c = prev[x - 3] if x >= 3 else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    return rows
def clay(rows):  # the plain body colour: red well above blue
    return sum(1 for r in rows for x in range(0, len(r), 3) if r[x] > r[x + 2] + 40 and r[x] > r[x + 1] + 15)
a, b = clay(png_rgb(sys.argv[1])), clay(png_rgb(sys.argv[2]))
print("body pixels: box %d, embedded sphere %d" % (a, b))
assert a > 2000 and 0 < b < 0.5 * a, (a, b)
PY

# A scene mixing a tet10 body (gmsh box at order 2) and a tet4 one: each frame
# keeps the tet10 cells quadratic (meshio: a tetra10 block beside the tetra
# one) and the OBJ splits the tet10 body's curved faces in 4.  Runs once tet10
# bodies run in a scene; until then the refusal is reported as a skip.
cat > "$E/mixed.json" <<JSON
{"duration": {"frames": 1, "fps": 30}, "integrator": {"type": "backward_euler"},
 "bodies": [{"name": "quad", "mesh": "$DEFO_SRC/data/gmsh/box_o2_msh22.msh", "formulation": "corotated"},
            {"name": "lin", "generator": {"type": "box", "cells": 1, "center": [5, 0, 3]},
             "formulation": "corotated"}],
 "outputs": {"png": false}}
JSON
if "$DEFO" run "$E/mixed.json" -o "$E/mixed" --threads 1 --quiet 2> "$E/mixed.err"; then
  $py - "$E/mixed" "$DEFO_SRC/data/gmsh/box_o2_msh22.msh" <<'PY' && ok || bad "mixed tet4/tet10 frame"
import sys, os, meshio
d = sys.argv[1]
q = meshio.read(sys.argv[2])
nq = sum(len(c.data) for c in q.cells if c.type == "tetra10")
m = meshio.read(os.path.join(d, "frames/frame_0001.vtu"))
kinds = {c.type: len(c.data) for c in m.cells}
assert kinds == {"tetra10": nq, "tetra": 6}, kinds
PY
elif grep -q "needs tet4" "$E/mixed.err"; then
  echo "SKIP: tet10 bodies do not run in a scene yet: $(cat "$E/mixed.err")"
else
  bad "mixed tet4/tet10 scene: $(cat "$E/mixed.err")"
fi

sed 's/oct.obj/missing.obj/' "$E/scene.json" > "$E/missing.json"
"$DEFO" validate "$E/missing.json" > "$E/vout" 2>&1; got=$?
[ "$got" = 2 ] && ok || bad "validate of a missing embedded file exit $got (want 2)"
grep -q 'bodies\[0\]\.embedded\.file' "$E/vout" && ok || bad "missing embedded file: no JSON path: $(cat "$E/vout")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
