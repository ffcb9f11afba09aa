#!/usr/bin/env bash
# The engine benchmark: `tessera render` against metapixel 1.0.2 and phomo (phomo-cli from
# crates.io), same machine, same run.
#
# usage: scripts/bench-engine.sh [DATA_DIR]
#   DATA_DIR holds tiles/emoji-noto, tiles/photos and targets/ as scripts/fetch-data.sh
#   writes them (run when the folder is missing). Default: data/ in the repository.
# env:   OUT=DIR                  work and result folder (default target/bench-engine)
#        TESSERA=PATH             the tessera binary (default: built here in release)
#        SKIP_METAPIXEL=1         Tessera rows only
#        SKIP_SLOW_METAPIXEL=1    skip metapixel's one-tile-per-pixel runs (about 90 s each)
#        SKIP_PHOMO=1             no phomo rows (phomo-cli is built into $OUT/phomo when missing)
# Needs GNU time (/usr/bin/time), metapixel (installed with apt-get when missing) and Python 3
# (Pillow in a virtual environment under $OUT, to cut the photo crops library).
# Prints a Markdown table (also written to $OUT/table.md) for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
OUT=${OUT:-target/bench-engine}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_DIR=$OUT
. scripts/bench-lib.sh

if [ ! -d "$DATA/tiles/emoji-noto" ]; then
    scripts/fetch-data.sh "$DATA"
fi
TARGET="$DATA/targets/skimage_astronaut.png"
[ -f "$TARGET" ] || { echo "missing $TARGET" >&2; exit 1; }

if [ -z "${SKIP_METAPIXEL:-}" ] && ! command -v metapixel >/dev/null; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get install -y metapixel || { $SUDO apt-get update && $SUDO apt-get install -y metapixel; }
fi
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }

release_build
cargo build --release -p tessera-engine --example metrics --example flatten
METRICS="$CARGO_TARGET_DIR/release/examples/metrics"
FLATTEN="$CARGO_TARGET_DIR/release/examples/flatten"

# A library of thousands of photos: 24 crops of each shared photo (scripts/make-crops.py).
photo_crops "$DATA"
PHOMO="$OUT/phomo/bin/phomo"
if [ -z "${SKIP_PHOMO:-}" ] && [ ! -x "$PHOMO" ]; then
    cargo install --quiet phomo-cli --version 0.6.3 --root "$OUT/phomo" || cargo install --quiet phomo-cli --root "$OUT/phomo"
fi

ROWS="$OUT/rows.md"
: > "$ROWS"

# row LABEL IMAGE COLS ROWS: measures IMAGE and appends a table row with the last timings.
row() {
    local label=$1 image=$2 cols=$3 rows=$4 q
    if [ -n "$image" ]; then
        q=$("$METRICS" "$TARGET" "$image" "$cols" "$rows")
        local de=$(sed -E 's/.*de00_mean=([0-9.]+).*/\1/' <<< "$q")
        local p95=$(sed -E 's/.*de00_p95=([0-9.]+).*/\1/' <<< "$q")
        local ssim=$(sed -E 's/.*ssim_view=([0-9.]+|none).*/\1/' <<< "$q")
        local r1=$(sed -E 's/.*dup_r1=([0-9.]+).*/\1/' <<< "$q")
        local r5=$(sed -E 's/.*dup_r5=([0-9.]+).*/\1/' <<< "$q")
        printf '| %s | %s | %s | %s | %.2f | %.2f | %s | %.1f %% | %.1f %% |\n' "$label" "$WALL" "$CPU" "$RSS" \
            "$de" "$p95" "$ssim" "$(awk "BEGIN {print $r1 * 100}")" "$(awk "BEGIN {print $r5 * 100}")" | tee -a "$ROWS"
    else
        printf '| %s | %s | %s | %s | | | | | |\n' "$label" "$WALL" "$CPU" "$RSS" | tee -a "$ROWS"
    fi
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# Libraries: Tessera's index, and metapixel's prepared tables (tiles flattened onto white first).
measure tessera-index-emoji "$TESSERA" library index "$DATA/tiles/emoji-noto" -o "$OUT/emoji.idx" -q
row "tessera library index (emoji, 3,786 files)" "" 0 0
measure tessera-index-photos "$TESSERA" library index "$DATA/tiles/photos" -o "$OUT/photos.idx" -q
row "tessera library index (photos)" "" 0 0
if [ -z "${SKIP_METAPIXEL:-}" ]; then
    rm -rf "$OUT/emoji-flat" "$OUT/photos-flat" "$OUT/mp-emoji" "$OUT/mp-photos"
    "$FLATTEN" "$DATA/tiles/emoji-noto" "$OUT/emoji-flat"
    "$FLATTEN" "$DATA/tiles/photos" "$OUT/photos-flat"
    mkdir -p "$OUT/mp-emoji" "$OUT/mp-photos"
    measure mp-prepare-emoji metapixel-prepare --width=64 --height=64 "$OUT/emoji-flat" "$OUT/mp-emoji"
    row "metapixel-prepare (emoji)" "" 0 0
    measure mp-prepare-photos metapixel-prepare --width=64 --height=64 "$OUT/photos-flat" "$OUT/mp-photos"
    row "metapixel-prepare (photos)" "" 0 0
fi

# tessera_run NAME LIBRARY COLS ROWS ARGS...
tessera_run() {
    local name=$1 lib=$2 cols=$3 rows=$4
    shift 4
    measure "$name" "$TESSERA" render "$TARGET" -l "$lib" -o "$OUT/$name.png" -q --allow-large "$@"
    row "Tessera, $name" "$OUT/$name.png" "$cols" "$rows"
}
# metapixel_run NAME LIBDIR SCALE COLS ROWS [--distance=N]
metapixel_run() {
    local name=$1 lib=$2 scale=$3 cols=$4 rows=$5
    shift 5
    measure "$name" metapixel -l "$lib" --width=16 --height=16 --scale="$scale" "$@" --metapixel "$TARGET" "$OUT/$name.png"
    row "metapixel, $name" "$OUT/$name.png" "$cols" "$rows"
}

# (a) 128 x 128 cells, 16 px tiles (2048 x 2048), on library LIB (emoji or photos).
grid_a() {
    local lib=$1
    tessera_run "a-$lib-r1" "$OUT/$lib.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 1
    tessera_run "a-$lib-r1-turned" "$OUT/$lib.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 1 --flip --rotate
    tessera_run "a-$lib-r0" "$OUT/$lib.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 0
    tessera_run "a-$lib-r5" "$OUT/$lib.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 5
    if [ -z "${SKIP_METAPIXEL:-}" ]; then
        metapixel_run "a-$lib-default" "$OUT/mp-$lib" 4 128 128
        metapixel_run "a-$lib-distance1" "$OUT/mp-$lib" 4 128 128 --distance=1
        metapixel_run "a-$lib-distance0" "$OUT/mp-$lib" 4 128 128 --distance=0
    fi
}

grid_a emoji
# (a) with colour weighed over form (`--form 11`; the default is 50).
tessera_run a-emoji-r1-form11 "$OUT/emoji.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 1 --form 11
# (a) with the emoji over the background the photo suits (Tessera's --background auto picks black
# for the astronaut), against metapixel on the same tiles flattened onto black.
tessera_run a-emoji-r1-auto "$OUT/emoji.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 1 --background auto
tessera_run a-emoji-r1-auto-turned "$OUT/emoji.idx" 128 128 --cells 128 --tile-size 16 --repeat-radius 1 --background auto --flip --rotate
if [ -z "${SKIP_METAPIXEL:-}" ]; then
    rm -rf "$OUT/emoji-black" "$OUT/mp-emoji-black"
    "$FLATTEN" "$DATA/tiles/emoji-noto" "$OUT/emoji-black" 000000
    mkdir -p "$OUT/mp-emoji-black"
    metapixel-prepare --width=64 --height=64 "$OUT/emoji-black" "$OUT/mp-emoji-black" >/dev/null
    metapixel_run a-emoji-black-distance1 "$OUT/mp-emoji-black" 4 128 128 --distance=1
    metapixel_run a-emoji-black-distance0 "$OUT/mp-emoji-black" 4 128 128 --distance=0
fi
# (b) one tile per source pixel: 512 x 512 cells, 16 px tiles (8192 x 8192), emoji.
tessera_run b-emoji-r1 "$OUT/emoji.idx" 512 512 --per-pixel --tile-size 16 --repeat-radius 1
if [ -z "${SKIP_METAPIXEL:-}" ] && [ -z "${SKIP_SLOW_METAPIXEL:-}" ]; then
    metapixel_run b-emoji-default "$OUT/mp-emoji" 16 512 512
    metapixel_run b-emoji-distance1 "$OUT/mp-emoji" 16 512 512 --distance=1
    metapixel_run b-emoji-distance0 "$OUT/mp-emoji" 16 512 512 --distance=0
fi
grid_a photos

# (c) every tile at most once: 64 x 64 cells of 8 px (512 x 512) from the photo crops, against
# phomo's auction and Hungarian solvers (tiles resized to the cell, its default L1 metric).
measure tessera-index-crops "$TESSERA" library index "$DATA/tiles/photo-crops" -o "$OUT/crops.idx" -q
row "tessera library index (photo crops, $(ls "$DATA/tiles/photo-crops" | wc -l) files)" "" 0 0
tessera_run c-crops-once "$OUT/crops.idx" 64 64 --cells 64 --tile-size 8 --repeat-radius 0 --max-uses 1
tessera_run c-crops-once-turned "$OUT/crops.idx" 64 64 --cells 64 --tile-size 8 --repeat-radius 0 --max-uses 1 --flip --rotate
if [ -z "${SKIP_PHOMO:-}" ]; then
    for solver in auction hungarian; do
        measure "c-phomo-$solver" "$PHOMO" -q "$TARGET" "$DATA/tiles/photo-crops" "$OUT/c-phomo-$solver.png" \
            --grid-size 64,64 --resize-tiles --solver "$solver"
        row "phomo, $solver" "$OUT/c-phomo-$solver.png" 64 64
    done
fi

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
{
    echo "| run | wall s | CPU s | peak RSS MB | mean CIEDE2000 | p95 CIEDE2000 | ssim_view | identical tile within 1 | within 5 |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    cat "$ROWS"
} > "$OUT/table.md"
echo
cat "$OUT/table.md"
