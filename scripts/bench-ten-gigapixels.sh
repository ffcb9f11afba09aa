#!/usr/bin/env bash
# Ten gigapixels through the roles: a web front end, a job controller and an image processor as
# separate processes over one data folder (the embedded backend), each with the pixel limit
# raised by the operator. One job of about 1 gigapixel, then one of about 10 (the astronaut in
# 64 px emoji, as TIFF), each timed from the upload to done; the TIFF opened by Pillow; the
# Deep Zoom descriptor and tiles at every level read from the web role. Prints the time, each
# process's peak memory (VmHWM), and the disk the data folder takes during and after each job.
#
# usage: scripts/bench-ten-gigapixels.sh [DATA]     (default data/; fetched when missing)
# env:   OUT=DIR       work folder (default target/bench-ten-gigapixels; the data folder in it
#                      is emptied first)
#        TESSERA=PATH  the tessera binary (default: built here in release)
#        SMALL=494 LARGE=1563 TILE=64    cells across of the two jobs, and the tile size
#        SLICES_SMALL=8 SLICES_LARGE=80
# Needs about 3 times the 10-gigapixel TIFF's size free on disk while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
OUT=${OUT:-target/bench-ten-gigapixels}
SMALL=${SMALL:-494}
LARGE=${LARGE:-1563}
TILE=${TILE:-64}
SLICES_SMALL=${SLICES_SMALL:-8}
SLICES_LARGE=${SLICES_LARGE:-80}
PORT=${PORT:-18180}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -d "$DATA/tiles/emoji-noto" ] || scripts/fetch-data.sh "$DATA"
TARGET="$DATA/targets/skimage_astronaut.png"
. scripts/bench-lib.sh
release_build
PYTHON=$OUT/venv/bin/python
[ -x "$PYTHON" ] || { python3 -m venv "$OUT/venv" && "$OUT/venv/bin/pip" install -q pillow; }

STORE="$OUT/data"
rm -rf "$STORE"
mkdir -p "$STORE"
export TESSERA_LOG=${TESSERA_LOG:-warn}
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
now() { date +%s.%N; }
peak_mb() { awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
disk_gb() { du -sb "$STORE" | awk '{printf "%.2f", $1 / 1e9}'; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

"$TESSERA" --data "$STORE" library import "$DATA/tiles/emoji-noto" --name emoji > "$OUT/import.log"

# The default limit refuses the large job, naming the setting.
TESSERA_WEB__PORT=$PORT "$TESSERA" --data "$STORE" web > "$OUT/web-default.log" 2>&1 &
PIDS=($!)
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
echo "With the default limit, the 10-gigapixel job is refused:"
curl -s -F "image=@$TARGET" -F library=emoji -F "tile_size=$TILE" -F "cells=$LARGE" \
    -F allow_large=true "http://127.0.0.1:$PORT/api/v1/jobs"
echo
kill "${PIDS[@]}"; wait 2>/dev/null || true

export TESSERA_LIMITS__MAX_OUTPUT_PIXELS=12000000000
TESSERA_WEB__PORT=$PORT "$TESSERA" --data "$STORE" web > "$OUT/web.log" 2>&1 &
WEB=$!
"$TESSERA" --data "$STORE" controller > "$OUT/controller.log" 2>&1 &
CONTROLLER=$!
"$TESSERA" --data "$STORE" processor > "$OUT/processor.log" 2>&1 &
PROCESSOR=$!
PIDS=("$WEB" "$CONTROLLER" "$PROCESSOR")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

TABLE="$OUT/table.md"
{
    echo "| job | pixels | wall s | vs the 1-gigapixel job | peak MB web / controller / processor | disk during (max) / after, GB | TIFF GB | Pillow opens it |"
    echo "|---|---|---|---|---|---|---|---|"
} > "$TABLE"

# run NAME CELLS SLICES: one job as TIFF; sets WALL.
run() {
    local name=$1 cells=$2 slices=$3 started id view max_disk=0 d
    started=$(now)
    id=$(curl -sf -F "image=@$TARGET" -F library=emoji -F "tile_size=$TILE" -F "cells=$cells" \
        -F "slices=$slices" -F format=tiff -F allow_large=true \
        "http://127.0.0.1:$PORT/api/v1/jobs" | field 'd["id"]')
    local deadline=$(( $(date +%s) + ${JOB_DEADLINE:-3600} ))
    while :; do
        view=$(curl -sf "http://127.0.0.1:$PORT/api/v1/jobs/$id")
        case $view in
            *'"state":"done"'*) break ;;
            *'"state":"failed"'*) echo "job failed: $view" >&2; exit 1 ;;
        esac
        [ "$(date +%s)" -lt "$deadline" ] || { echo "job $id not done: $view" >&2; exit 1; }
        d=$(disk_gb)
        max_disk=$(awk "BEGIN {print ($d > $max_disk) ? $d : $max_disk}")
        sleep 2
    done
    WALL=$(awk "BEGIN {printf \"%.1f\", $(now) - $started}")
    echo "$name: done in $WALL s" >&2
    local width height after tif_gb opened
    width=$(field 'd["output"]["width"]' <<< "$view")
    height=$(field 'd["output"]["height"]' <<< "$view")
    after=$(disk_gb)
    curl -sf -o "$OUT/$name.tif" "http://127.0.0.1:$PORT/api/v1/jobs/$id/result"
    tif_gb=$(stat -c %s "$OUT/$name.tif" | awk '{printf "%.2f", $1 / 1e9}')
    opened=$("$PYTHON" - "$OUT/$name.tif" <<'PY'
import sys
from PIL import Image
Image.MAX_IMAGE_PIXELS = None
im = Image.open(sys.argv[1])
big = open(sys.argv[1], "rb").read(4)[2] == 43
dpi = float(im.info["dpi"][0]) if "dpi" in im.info else 0
print(f"{im.size[0]} x {im.size[1]}, {dpi:.0f} dpi, {im.n_frames} levels{', BigTIFF' if big else ''}")
PY
)
    # The Deep Zoom descriptor, then a tile of every level from the web role (made on request).
    local dzi_started levels=0
    dzi_started=$(now)
    curl -sf "http://127.0.0.1:$PORT/api/v1/jobs/$id/dzi" > "$OUT/$name.dzi"
    local max_level
    max_level=$(python3 -c "import math; print(math.ceil(math.log2(max($width, $height))))")
    for level in $(seq 0 "$max_level"); do
        curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/v1/jobs/$id/dzi_files/$level/0_0.png" && levels=$((levels + 1))
    done
    local dzi_s
    dzi_s=$(awk "BEGIN {printf \"%.1f\", $(now) - $dzi_started}")
    rm -f "$OUT/$name.tif"
    local mp
    mp=$(awk "BEGIN {printf \"%.2f\", $width * $height / 1e9}")
    ROW="| $name, $cells cells of $TILE px, $slices slices | $width x $height ($mp Gpx) | $WALL | RATIO | $(peak_mb "$WEB") / $(peak_mb "$CONTROLLER") / $(peak_mb "$PROCESSOR") | $max_disk / $after | $tif_gb | $opened; Deep Zoom: $levels levels' corner tiles in $dzi_s s |"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run one-gigapixel "$SMALL" "$SLICES_SMALL"
SMALL_WALL=$WALL
echo "${ROW/RATIO/1.00}" >> "$TABLE"
run ten-gigapixels "$LARGE" "$SLICES_LARGE"
echo "${ROW/RATIO/$(awk "BEGIN {printf \"%.2f\", $WALL / $SMALL_WALL}")}" >> "$TABLE"
echo "disk after both jobs: $(disk_gb) GB in $STORE" >&2
cat "$TABLE"
