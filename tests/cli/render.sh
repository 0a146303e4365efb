#!/usr/bin/env bash
# CLI contract for `defo render`: PNGs of the requested size from a .vtu, a
# .pvd and an output folder; a contact sheet; and every error path exits 2
# with a one-line reason (missing file, bad field name naming the available
# fields, bad size, frame out of range, unknown option).
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_render"
rm -rf "$T"; mkdir -p "$T"

# PNG width and height from the IHDR chunk (bytes 16..23, big endian).
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }

# A mesh to draw: the demo's torus.
"$DEFO" demo -o "$T/demo" > "$T/demo.log" 2>&1 || bad "defo demo failed: $(cat "$T/demo.log")"

# 1. a single .vtu at a given size
if "$DEFO" render "$T/demo/torus.vtu" -o "$T/torus.png" --size 320x200 > "$T/r1.log" 2>&1; then
  [ "$(png_size "$T/torus.png")" = "320x200" ] && ok || bad "torus.png size $(png_size "$T/torus.png")"
else bad "render torus.vtu exit $?: $(cat "$T/r1.log")"; fi
# the object is in the middle: the centre pixel is not background grey
$py - "$T/torus.png" <<'PY' && ok || bad "torus centre pixel"
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
w, h = struct.unpack('>II', data[16:24])
idat = b''; i = 8
while i < len(data):
    n = struct.unpack('>I', data[i:i+4])[0]; t = data[i+4:i+8]
    if t == b'IDAT': idat += data[i+8:i+8+n]
    i += 12 + n
raw = zlib.decompress(idat); stride = 3 * w
rows = []; prev = bytearray(stride); p = 0
for y in range(h):
    f = raw[p]; line = bytearray(raw[p+1:p+1+stride]); p += 1 + stride
    for x in range(stride):
        a = line[x-3] if x >= 3 else 0; b = prev[x]; c = prev[x-3] if x >= 3 else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
def px(x, y): r = rows[y]; return r[3*x], r[3*x+1], r[3*x+2]
# the torus has a hole at its centre: look for body colour (orange: r >> b) near the middle
found = any(px(x, y)[0] > px(x, y)[2] + 40 for x in range(w//4, 3*w//4) for y in range(h//4, 3*h//4))
corner = px(0, 0)
assert found, "no body pixel in the middle half"
assert max(corner) - min(corner) < 30, corner
PY

# Sheet layout (render/image.c): 8 px margins, 3 columns for 6 tiles, 13 px labels, 24 px title.
# 2. a sequence as .pvd + frames (written by meshio from the torus: it sinks and squashes)
$py - "$T/demo/torus.vtu" "$T/seq" <<'PY' || bad "meshio could not write the sequence"
import sys, os, meshio, numpy as np
m = meshio.read(sys.argv[1]); out = sys.argv[2]
os.makedirs(out + "/frames", exist_ok=True)
p0 = m.points.copy(); z0 = p0[:, 2].min()
entries = []
for f in range(10):
    s = f / 9.0
    p = p0.copy()
    p[:, 2] = z0 + (p0[:, 2] - z0) * (1 - 0.5 * s)
    p[:, 0] *= 1 + 0.2 * s; p[:, 1] *= 1 + 0.2 * s
    J = np.full(len(m.cells[0].data), (1 - 0.5 * s) * (1 + 0.2 * s) ** 2)
    name = "frames/frame_%04d.vtu" % f
    meshio.write(out + "/" + name, meshio.Mesh(p, m.cells, cell_data={"J": [J]}), compression=None)
    entries.append('<DataSet timestep="%g" file="%s"/>' % (s, name))
open(out + "/scene.pvd", "w").write('<?xml version="1.0"?>\n<VTKFile type="Collection"><Collection>\n'
    + "\n".join(entries) + '\n</Collection></VTKFile>\n')
PY
if "$DEFO" render "$T/seq" -o "$T/last.png" > "$T/r2.log" 2>&1; then
  [ "$(png_size "$T/last.png")" = "800x600" ] && ok || bad "last.png size"
  grep -q "frame 9 of 10" "$T/r2.log" && ok || bad "default frame is not the last: $(cat "$T/r2.log")"
else bad "render folder exit $?: $(cat "$T/r2.log")"; fi
"$DEFO" render "$T/seq/scene.pvd" -o "$T/f2.png" --frame 2 --color J --size 200x150 > "$T/r3.log" 2>&1 \
  && [ "$(png_size "$T/f2.png")" = "200x150" ] && ok || bad "render pvd --frame 2: $(cat "$T/r3.log")"
"$DEFO" render "$T/seq" -o "$T/sheet.png" --sheet --count 6 --size 200x150 > "$T/r4.log" 2>&1 \
  && [ "$(png_size "$T/sheet.png")" = "$((8 + 3 * (200 + 8)))x$((24 + 8 + 2 * (150 + 13 + 8)))" ] && ok \
  || bad "sheet: $(cat "$T/r4.log") size $(png_size "$T/sheet.png" 2>/dev/null)"
"$DEFO" render "$T/seq" -o "$T/soft.png" --backend software --size 160x120 > "$T/r5.log" 2>&1 \
  && grep -q software "$T/r5.log" && ok || bad "software backend: $(cat "$T/r5.log")"
# --video: an MP4 when ffmpeg is installed, else a message and exit 0
"$DEFO" render "$T/seq" -o "$T/seq.mp4" --video --size 160x120 > "$T/r6.log" 2>&1 && ok || bad "--video exit $?"
if command -v ffmpeg > /dev/null; then
  [ -s "$T/seq.mp4" ] && ok || bad "no seq.mp4"
  # a real H.264 stream with one video frame per .vtu frame
  if command -v ffprobe > /dev/null; then
    nvtu=$(ls "$T/seq/frames/"*.vtu 2>/dev/null | wc -l)
    info=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=codec_name,nb_read_frames -of csv=p=0 "$T/seq.mp4")
    [ "$info" = "h264,$nvtu" ] && ok || bad "seq.mp4: '$info', expected h264,$nvtu"
    # it plays at the frames' own rate: timesteps 1/9 s apart -> 9 fps (not 24)
    rate=$(ffprobe -v error -select_streams v:0 -show_entries stream=r_frame_rate -of csv=p=0 "$T/seq.mp4")
    [ "$rate" = "9/1" ] && grep -q "at 9 fps from the frame times" "$T/r6.log" && ok \
      || bad "seq.mp4 frame rate '$rate': $(cat "$T/r6.log")"
  fi
else grep -q "ffmpeg is not installed" "$T/r6.log" && ok || bad "--video message"; fi

# 2b. an output folder of `defo run` draws the scene's colliders (from its
# scene.json) at the frame's time: the press cylinder sits above the block,
# so the folder's picture differs from the same frame's .vtu drawn alone
SCENES="$(cd "$(dirname "$0")/../../examples/scenes" && pwd)"
if "$DEFO" run "$SCENES/cylinder_press.json" -o "$T/press" --frames 2 --threads 1 > "$T/run.log" 2>&1; then
  "$DEFO" render "$T/press" -o "$T/press_a.png" --size 320x240 > "$T/r7.log" 2>&1 \
    && ! grep -q warning "$T/r7.log" && ok || bad "render run folder: $(cat "$T/r7.log")"
  "$DEFO" render "$T/press/frames/frame_0002.vtu" -o "$T/press_b.png" --size 320x240 > "$T/r8.log" 2>&1 \
    && ok || bad "render press vtu: $(cat "$T/r8.log")"
  $py - "$T/press_a.png" "$T/press_b.png" <<'PY' && ok || bad "collider not drawn (images equal)"
import sys, zlib, struct
def rgb(path):
    data = open(path, 'rb').read(); idat = b''; i = 8
    w, h = struct.unpack('>II', data[16:24])
    while i < len(data):
        n = struct.unpack('>I', data[i:i+4])[0]
        if data[i+4:i+8] == b'IDAT': idat += data[i+8:i+8+n]
        i += 12 + n
    return w, h, zlib.decompress(idat)
a, b = rgb(sys.argv[1]), rgb(sys.argv[2])
assert a[:2] == b[:2]
# filtered rows still differ wherever the pixels do: count differing bytes
diff = sum(1 for x, y in zip(a[2], b[2]) if x != y)
assert diff > 500, diff
PY
  "$DEFO" render "$T/press/scene.pvd" -o "$T/press_sheet.png" --sheet --size 160x120 > "$T/r9.log" 2>&1 \
    && ok || bad "sheet of run folder: $(cat "$T/r9.log")"
  # a run's video plays at the scene's fps
  if command -v ffprobe > /dev/null; then
    want=$($py -c "import json; print('%g' % json.load(open('$T/press/summary.json'))['fps'])")
    "$DEFO" render "$T/press" -o "$T/press.mp4" --video --size 160x120 > "$T/r9v.log" 2>&1 || bad "run video: $(cat "$T/r9v.log")"
    rate=$(ffprobe -v error -select_streams v:0 -show_entries stream=r_frame_rate -of csv=p=0 "$T/press.mp4")
    [ "$rate" = "$want/1" ] && grep -q "at $want fps from the scene" "$T/r9v.log" && ok \
      || bad "run video frame rate '$rate', scene fps $want: $(cat "$T/r9v.log")"
  fi
  # without scene.json: still drawn, with one warning line
  rm "$T/press/scene.json"
  "$DEFO" render "$T/press" -o "$T/press_c.png" --size 320x240 > "$T/r10.log" 2> "$T/r10.err" \
    && [ "$(grep -c warning "$T/r10.err")" -eq 1 ] && ok || bad "no scene.json: $(cat "$T/r10.err")"
  # Same folder, same caption, with and without scene.json: only the colliders
  # (and the framing they widen) can make these two pictures differ.
  $py - "$T/press_a.png" "$T/press_c.png" <<'PY' && ok || bad "scene.json colliders change nothing"
import sys, zlib, struct
def rgb(path):
    data = open(path, 'rb').read(); idat = b''; i = 8
    while i < len(data):
        n = struct.unpack('>I', data[i:i+4])[0]
        if data[i+4:i+8] == b'IDAT': idat += data[i+8:i+8+n]
        i += 12 + n
    return zlib.decompress(idat)
a, c = rgb(sys.argv[1]), rgb(sys.argv[2])
assert sum(1 for x, y in zip(a, c) if x != y) > 500
PY
else bad "defo run cylinder_press failed: $(cat "$T/run.log")"; fi

# 3. error paths: exit 2, one line, naming the problem; no output file left
expect_fail() { # reason-substring args...
  local want="$1"; shift
  "$DEFO" render "$@" > "$T/err.out" 2> "$T/err.log"; local rc=$?
  if [ $rc -ne 2 ]; then bad "exit $rc (want 2) for: $*"; return; fi
  [ "$(wc -l < "$T/err.log")" -eq 1 ] || { bad "not one line for: $*: $(cat "$T/err.log")"; return; }
  grep -q -- "$want" "$T/err.log" && ok || bad "'$want' not in: $(cat "$T/err.log")"
}
expect_fail "no such file" "$T/missing.vtu" -o "$T/e1.png"
expect_fail "available: J" "$T/seq" -o "$T/e2.png" --color stress
expect_fail "expected WxH" "$T/seq" -o "$T/e3.png" --size 10x10
expect_fail "expected WxH" "$T/seq" -o "$T/e3.png" --size banana
expect_fail "out of range" "$T/seq" -o "$T/e4.png" --frame 10
expect_fail "unknown option" "$T/seq" -o "$T/e5.png" --bogus
expect_fail "no output" "$T/seq"
echo "not a mesh" > "$T/junk.vtu"
expect_fail "junk.vtu" "$T/junk.vtu" -o "$T/e6.png"
for f in e1 e2 e3 e4 e5 e6; do [ -e "$T/$f.png" ] && bad "$f.png was written"; done

echo "render CLI: $pass passed, $fail failed"
[ $fail -eq 0 ]
