#!/usr/bin/env bash
# Camera-sized photos as tiles: `tessera library index` of N photos as cameras and phones make
# them (JPEGs of 6000 x 4000, 8064 x 6048 and 4032 x 3024, cut from the real photographs in
# DATA/targets and scaled up, so that their detail is a photograph's), with wall time, CPU and
# peak memory, against the same photos at 1600 x 1200 as a phone that reduced them would send.
#
# usage: scripts/bench-camera-import.sh [DATA_DIR] [N]
#   DATA_DIR holds targets/ as scripts/fetch-data.sh writes them (default: data/); N photos
#   (default 100; 1,000 takes about 2 GB of disk and several minutes to make).
# env:   OUT=DIR      work and result folder (default target/bench-camera-import)
#        TESSERA=PATH the tessera binary (default: built here in release)
# Needs GNU time (/usr/bin/time) and Python 3 (Pillow in a virtual environment under $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
N=${2:-100}
OUT=${OUT:-target/bench-camera-import}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_DIR=$OUT
. scripts/bench-lib.sh

[ -d "$DATA/targets" ] || scripts/fetch-data.sh "$DATA"
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
if [ -z "${TESSERA:-}" ]; then
    cargo build --release --quiet
    TESSERA=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/tessera
fi
[ -x "$OUT/venv/bin/python" ] || { python3 -m venv "$OUT/venv" && "$OUT/venv/bin/pip" install -q pillow; }

# The photos, made once per N.
make_photos() {
    local dir=$1 reduced=$2
    [ -f "$dir/.done" ] && return
    rm -rf "$dir" && mkdir -p "$dir"
    "$OUT/venv/bin/python" - "$DATA/targets" "$dir" "$N" "$reduced" <<'PY'
import os, sys
from PIL import Image
src, dst, n, reduced = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
photos = [Image.open(os.path.join(src, f)).convert("RGB") for f in sorted(os.listdir(src))
          if f.lower().endswith((".jpg", ".jpeg", ".png"))]
sizes = [(6000, 4000), (8064, 6048), (4032, 3024)]
for i in range(n):
    photo = photos[i % len(photos)]
    w, h = sizes[i % len(sizes)]
    if i % 2:
        w, h = h, w  # half of them upright
    # A different part of the photograph for each file, so that none is a duplicate.
    f = 0.5 + 0.5 * ((i * 37) % 100) / 100
    cw, ch = int(photo.width * f), int(photo.height * f)
    x, y = (i * 53) % max(1, photo.width - cw + 1), (i * 29) % max(1, photo.height - ch + 1)
    img = photo.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BILINEAR)
    if reduced:
        img.thumbnail((1600, 1600))
    img.save(os.path.join(dst, f"IMG_{i:04d}.jpg"), quality=88)
PY
    touch "$dir/.done"
}
make_photos "$OUT/camera-$N" 0
make_photos "$OUT/reduced-$N" 1

echo "| photos | files | MB on disk | wall s | CPU s | peak RSS MB | tiles |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for kind in camera reduced; do
    dir="$OUT/$kind-$N"
    mb=$(du -sm "$dir" | cut -f1)
    measure "index-$kind-$N" "$TESSERA" library index "$dir" -o "$OUT/$kind-$N.index"
    tiles=$(grep -o '[0-9]* tiles imported' "$OUT/index-$kind-$N.log" | head -1 | cut -d' ' -f1)
    echo "| $kind | $N | $mb | $WALL | $CPU | $RSS | ${tiles:-?} |"
done
