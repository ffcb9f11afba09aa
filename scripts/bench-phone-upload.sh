#!/usr/bin/env bash
# What a phone sends to make a library of N photos of 12 megapixels (4032 x 3024 JPEGs, quality
# 92, cut from the real photographs in DATA/targets and scaled up, so that their detail is a
# photograph's): the libraries page in headless Chromium as a 390 x 844 phone reduces each photo
# before it leaves (scripts/bench-phone-upload.mjs), against a local `tessera serve` (release
# build, embedded storage in a temporary folder). Prints the bytes on disk and the bytes sent.
#
# usage: scripts/bench-phone-upload.sh [DATA_DIR] [N]    (DATA_DIR as for scripts/bench-engine.sh;
#        N photos, default 200)
# env:   OUT=DIR      where the photos are made once (default target/bench-phone-upload)
#        TESSERA=PATH the tessera binary (default: built here in release)
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
N=${2:-200}
OUT=${OUT:-target/bench-phone-upload}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -d "$DATA/targets" ] && [ -d "$DATA/tiles/emoji-noto" ] || scripts/fetch-data.sh "$DATA"
[ -x /usr/bin/chromium ] || { echo "needs Chromium at /usr/bin/chromium (apt-get install chromium)" >&2; exit 1; }
(cd tests/audit && { [ -d node_modules/puppeteer-core ] || npm ci --no-audit --no-fund --loglevel=error; })

. scripts/bench-lib.sh
release_build
[ -x "$OUT/venv/bin/python" ] || { python3 -m venv "$OUT/venv" && "$OUT/venv/bin/pip" install -q pillow; }

photos="$OUT/phone-$N"
if [ ! -f "$photos/.done" ]; then
    rm -rf "$photos" && mkdir -p "$photos"
    "$OUT/venv/bin/python" - "$DATA/targets" "$photos" "$N" <<'PY'
import os, sys
from PIL import Image
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
photos = [Image.open(os.path.join(src, f)).convert("RGB") for f in sorted(os.listdir(src))
          if f.lower().endswith((".jpg", ".jpeg", ".png"))]
for i in range(n):
    photo = photos[i % len(photos)]
    w, h = (3024, 4032) if i % 2 else (4032, 3024)
    # A different part of the photograph for each file, so that none is a duplicate.
    f = 0.5 + 0.5 * ((i * 37) % 100) / 100
    cw, ch = int(photo.width * f), int(photo.height * f)
    x, y = (i * 53) % max(1, photo.width - cw + 1), (i * 29) % max(1, photo.height - ch + 1)
    photo.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BILINEAR).save(
        os.path.join(dst, f"PXL_{i:04d}.jpg"), quality=92)
PY
    touch "$photos/.done"
fi

. scripts/local-server.sh
work=$(mktemp -d)
trap 'kill "${SERVER:-}" 2>/dev/null; wait "${SERVER:-}" 2>/dev/null; rm -rf "$work"' EXIT
start_server "$TESSERA" "$work" "$DATA/tiles/emoji-noto" "Noto Emoji"

result=$(node scripts/bench-phone-upload.mjs "$BASE" "Phone photos" "$photos"/PXL_*.jpg)
echo "$result" >&2
python3 - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
mb = lambda b: f"{b / 1e6:.1f}"
print("| photos | MB on disk | MB sent | sent / on disk | requests | s to the report | tiles |")
print("| --- | --- | --- | --- | --- | --- | --- |")
print(f"| {r['photos']} | {mb(r['bytes_on_disk'])} | {mb(r['bytes_sent'])} | "
      f"{r['bytes_sent'] / r['bytes_on_disk']:.3f} | {r['requests']} | {r['seconds']} | {r['tiles']} |")
PY
