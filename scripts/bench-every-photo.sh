#!/usr/bin/env bash
# Every photo in (`min_uses`): what the floor on uses costs in colour and time, against the same
# job with only a cap on uses and against phomo's auction solver, and at six figures.
#
# usage: scripts/bench-every-photo.sh [DATA]     (default data; fetched when missing)
# env:   OUT=DIR        work folder (default target/bench-every-photo; crops and indexes kept)
#        TILES=N        tiles of the large library (default 100000)
#        CELLS=N        cells across the large job's photo (default 424: 424 x 283 = 119,992
#                       cells on the 3:2 sunset)
#        SKIP_PHOMO=1   no phomo rows (phomo-cli 0.6.3 is built into $OUT/phomo when missing)
#        SKIP_LARGE=1   only the 7,425-crop jobs
#        TESSERA=PATH   the tessera binary (default: built here in release)
# Jobs:
#   1. the astronaut, 91 x 91 = 8,281 cells of 8 px, the 7,425 photo crops, repeat radius 1:
#      --max-uses 2; --min-uses 1 --max-uses 2; phomo --solver auction -n 2 at the same grid;
#   2. TILES photo crops (scripts/make-crops.py --total) with --min-uses 1 on about 120,000
#      cells of 8 px of a 12-megapixel photo, and phomo's auction on it where it finishes.
# Prints Markdown tables (also $OUT/table.md): wall time, CPU, peak RSS, the quality metric.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
OUT=${OUT:-target/bench-every-photo}
TILES=${TILES:-100000}
CELLS=${CELLS:-424}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_DIR=$OUT
. scripts/bench-lib.sh

[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA"
if [ ! -x /usr/bin/time ]; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get install -y time || { $SUDO apt-get update && $SUDO apt-get install -y time; }
fi
release_tessera
photo_crops "$DATA"
PHOMO="$OUT/phomo/bin/phomo"
if [ -z "${SKIP_PHOMO:-}" ] && [ ! -x "$PHOMO" ]; then
    cargo install --quiet phomo-cli --version 0.6.3 --root "$OUT/phomo" || cargo install --quiet phomo-cli --root "$OUT/phomo"
fi

ROWS="$OUT/table.md"
: > "$ROWS"
# row LABEL TARGET IMAGE COLS ROWS: the last timings and IMAGE's quality as a table row.
row() {
    local q de p95 ssim distinct
    q=$("$METRICS" "$2" "$3" "$4" "$5")
    de=$(sed -E 's/.*de00_mean=([0-9.]+).*/\1/' <<< "$q")
    p95=$(sed -E 's/.*de00_p95=([0-9.]+).*/\1/' <<< "$q")
    ssim=$(sed -E 's/.*ssim_view=([0-9.]+|none).*/\1/' <<< "$q")
    distinct=$(sed -nE 's/.*distinct=([0-9]+).*/\1/p' <<< "$q")
    printf '| %s | %s | %s | %s | %s | %.2f | %.2f | %s |\n' "$1" "$WALL" "$CPU" "$RSS" "${distinct:-}" \
        "$de" "$p95" "$ssim" | tee -a "$ROWS"
}
header() {
    printf '\n%s\n\n| run | wall s | CPU s | peak RSS MB | distinct tiles | mean CIEDE2000 | p95 | ssim_view |\n|---|---|---|---|---|---|---|---|\n' "$1" | tee -a "$ROWS"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
TARGET="$DATA/targets/skimage_astronaut.png"
measure index-crops "$TESSERA" library index "$DATA/tiles/photo-crops" -o "$OUT/crops.idx" -q
header "The astronaut, 91 x 91 cells of 8 px, $(ls "$DATA/tiles/photo-crops" | wc -l) photo crops, repeat radius 1"
measure capped "$TESSERA" render "$TARGET" -l "$OUT/crops.idx" -o "$OUT/capped.png" -q --cells 91 --tile-size 8 --max-uses 2
row "Tessera, --max-uses 2" "$TARGET" "$OUT/capped.png" 91 91
measure floor "$TESSERA" render "$TARGET" -l "$OUT/crops.idx" -o "$OUT/floor.png" -q --cells 91 --tile-size 8 --min-uses 1 --max-uses 2
row "Tessera, --min-uses 1 --max-uses 2" "$TARGET" "$OUT/floor.png" 91 91
if [ -z "${SKIP_PHOMO:-}" ]; then
    measure phomo "$PHOMO" -q "$TARGET" "$DATA/tiles/photo-crops" "$OUT/phomo.png" --grid-size 91,91 \
        --resize-tiles --solver auction -n 2
    row "phomo, auction, -n 2" "$TARGET" "$OUT/phomo.png" 91 91
fi

if [ -z "${SKIP_LARGE:-}" ]; then
    TARGET="$DATA/targets/lomiri_sunset_by_Aitzol_Berasategi.jpg"
    [ -d "$OUT/crops-$TILES" ] || crops --total "$TILES" "$DATA/tiles/photos" "$OUT/crops-$TILES" 32
    [ -f "$OUT/crops-$TILES.idx" ] || measure index-large "$TESSERA" library index "$OUT/crops-$TILES" -o "$OUT/crops-$TILES.idx" -q --rendition-size 16
    measure large "$TESSERA" render "$TARGET" -l "$OUT/crops-$TILES.idx" -o "$OUT/large.png" -q \
        --cells "$CELLS" --tile-size 8 --min-uses 1
    rows=$(sed -nE 's/^([0-9]+) x ([0-9]+) cells.*/\2/p' "$OUT/large.log" | head -1)
    header "$TILES photo crops, --min-uses 1, $CELLS x ${rows:-?} cells of 8 px"
    row "Tessera, --min-uses 1" "$TARGET" "$OUT/large.png" "$CELLS" "${rows:-1}"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
