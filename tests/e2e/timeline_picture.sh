#!/bin/sh
# timeline_picture.sh PROGRAM WORKDIR
#
# AG_PROFILE_TRACE's picture renders: PROGRAM (examples/tpu/mlp.c, staged)
# runs on the tpu-model with AG_PROFILE_TRACE=WORKDIR/trace.json; the
# trace must be JSON with every call, and trace.svg beside it must open in
# headless Chromium (Debian's `chromium`, a test dependency of
# scripts/build.sh): the DOM Chromium built has the boxes, rows, axis and
# legend (an SVG with an XML error gives Chromium's error page instead),
# and a screenshot shows them (the MXU's colour and enough ink). Without
# chromium the test fails: it is what checks the picture.
set -u
program=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v chromium >/dev/null 2>&1 ||
    fail "chromium is not installed: apt-get install chromium (scripts/build.sh deps does)"
rm -rf "$work" && mkdir -p "$work" || exit 1
AG_TARGET=tpu-model AG_PROFILE_TRACE="$work/trace.json" "$program" >"$work/run.out" 2>&1 ||
    { cat "$work/run.out" >&2; fail "the program failed"; }
test -s "$work/trace.svg" || fail "no picture at $work/trace.svg"
python3 - "$work/trace.json" <<'PY' || fail "the Chrome trace is not complete JSON with every call"
import json, sys
t = json.load(open(sys.argv[1]))
calls = [e for e in t["traceEvents"] if e.get("cat") == "call"]
assert calls and len(calls) == t["otherData"]["calls"], (len(calls), t["otherData"])
print("trace: calls %d" % len(calls))
PY
browse() { # the flags every run needs: root, no GPU, a scratch profile
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$work/chromium" "$@" 2>>"$work/chromium.log"
}
browse --dump-dom "file://$work/trace.svg" >"$work/dom.html" ||
    { tail -20 "$work/chromium.log" >&2; fail "chromium --dump-dom failed"; }
python3 - "$work/dom.html" <<'PY' || fail "Chromium's DOM of the picture lacks its parts"
import sys
dom = open(sys.argv[1]).read()
assert "error on line" not in dom and "<parsererror" not in dom, "XML error: " + dom[:500]
boxes = dom.count('class="box"')
assert boxes >= 10, "%d boxes" % boxes
for part in ('class="row"', "time (us)", "matrix units", 'class="call"', ">mxu<"):
    assert part in dom, "missing " + part
print("dom: %d boxes" % boxes)
PY
browse --screenshot="$work/shot.png" --window-size=1240,420 "file://$work/trace.svg" \
    >/dev/null || { tail -20 "$work/chromium.log" >&2; fail "chromium --screenshot failed"; }
python3 - "$work/shot.png" <<'PY' || fail "the screenshot does not show the picture"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, chunks, head = 8, [], None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        head = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        chunks.append(body)
    pos += 12 + n
w, h, depth, color = head[:4]
assert depth == 8 and color in (2, 6), head
bpp = 3 if color == 2 else 4
raw, stride, rows, prev = zlib.decompress(b"".join(chunks)), w * bpp, [], bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pred = [0, a, b, (a + b) // 2,
                a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c)
                else b if abs(p - b) <= abs(p - c) else c][f]
        line[i] = (line[i] + pred) & 255
    rows.append(line)
    prev = line
ink = mxu = 0
for line in rows:
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        ink += (r, g, b) != (255, 255, 255)
        mxu += abs(r - 0x4e) < 8 and abs(g - 0x79) < 8 and abs(b - 0xa7) < 8
share = ink / float(w * h)
assert share > 0.02 and mxu > 20, "ink %.3f, MXU pixels %d" % (share, mxu)
print("screenshot: %dx%d, %.1f%% ink, %d MXU pixels" % (w, h, 100 * share, mxu))
PY
echo "timeline picture: rendered by $(chromium --version 2>/dev/null | head -n 1)"
