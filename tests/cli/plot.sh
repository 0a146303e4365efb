#!/usr/bin/env bash
# CLI contract for `defo plot OUTDIR`: a PNG of the run's stats.jsonl over
# time — energies, inverted elements, volume ratio, iterations, ms per frame,
# contact pairs between bodies.
# The picture is checked against the data it draws: each series' colour is
# present in its panel, and a ball falling freely (kinetic energy rising
# every frame, never touching the ground) draws its kinetic line rising from
# the left of the panel to the right.  Errors exit 2 with one line.
set -uo pipefail
fail=0; pass=0
ok()  { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
py=/usr/bin/python3
T="$DEFO_TMP/cli_plot"
rm -rf "$T"; mkdir -p "$T"

cat > "$T/fall.json" <<'JSON'
{"name": "fall", "duration": {"frames": 6, "fps": 30},
 "bodies": [{"name": "ball", "generator": {"type": "sphere", "radius": 0.2, "center": [0, 0, 3],
   "cell_size": 0.1}, "material": {"model": "neo_hookean", "youngs": 2e4}}],
 "colliders": [{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}],
 "outputs": {"png": false, "vtu": false, "surface_obj": false}}
JSON
"$DEFO" run "$T/fall.json" -o "$T/run" --threads 1 --quiet > "$T/run.log" 2>&1 || bad "run: $(cat "$T/run.log")"
"$DEFO" plot "$T/run" > "$T/plot.out" 2> "$T/plot.err" && ok || bad "plot exit: $(cat "$T/plot.err")"
grep -q "wrote $T/run/stats.png (900x1000" "$T/plot.out" && ok || bad "plot message: $(cat "$T/plot.out")"
$py - "$T/run/stats.png" <<'PY' && ok || bad "the plot does not show the curves"
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
    return w, h, rows
w, h, rows = png_rgb(sys.argv[1])
assert (w, h) == (900, 1000), (w, h)
top, ph = 34, (1000 - 34 - 24) // 6
def pixels(panel, rgb, x0=80, x1=890):
    out = []
    for y in range(top + panel * ph + 20, top + (panel + 1) * ph):   # below the panel's legend line
        r = rows[y]
        for x in range(x0, x1):
            if (r[3 * x], r[3 * x + 1], r[3 * x + 2]) == rgb: out.append((x, y))
    return out
kin, total = pixels(0, (31, 119, 180)), pixels(0, (255, 127, 14))
inv, vol = pixels(1, (214, 39, 40)), pixels(2, (31, 119, 180))
cg, ms = pixels(3, (31, 119, 180)), pixels(4, (148, 103, 189))
con = pixels(5, (23, 190, 207))
print("series pixels: kinetic %d, elastic %d, inverted %d, volume %d, CG %d, ms %d, contact %d"
      % (len(kin), len(total), len(inv), len(vol), len(cg), len(ms), len(con)))
assert min(len(kin), len(total), len(inv), len(vol), len(cg), len(ms), len(con)) > 100
# free fall: kinetic energy rises every frame, so its line rises left to right
left = [y for x, y in kin if x < 160]; right = [y for x, y in kin if x > 810]
assert left and right and sum(left) / len(left) > sum(right) / len(right) + 50, (left[:3], right[:3])
PY
"$DEFO" plot "$T/run" -o "$T/small.png" --size 400x500 > /dev/null 2>&1 && \
  [ "$(od -An -tu1 -j16 -N8 "$T/small.png" | awk '{print $3*256+$4 "x" $7*256+$8}')" = "400x500" ] \
  && ok || bad "--size"

expect_bad() { # what, needle, args...
  local what=$1 needle=$2; shift 2
  "$DEFO" plot "$@" > "$T/o" 2> "$T/e"; local rc=$?
  [ $rc = 2 ] && [ "$(wc -l < "$T/e")" = 1 ] && grep -q -- "$needle" "$T/e" && ok \
    || bad "$what: rc=$rc $(cat "$T/e")"
}
expect_bad "missing folder" "cannot open" "$T/nope"
expect_bad "no argument" "missing OUTDIR"
expect_bad "bad size" "--size" "$T/run" --size 10x10
mkdir -p "$T/broken"; printf '{"frame": 0, "time": 0}\n{"frame": 1}\n' > "$T/broken/stats.jsonl"
expect_bad "line without time" "stats.jsonl:2:" "$T/broken"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
