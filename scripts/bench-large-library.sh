#!/usr/bin/env bash
# Six-figure tile libraries: 100,000 distinct photo crops, imported into a saved index with
# `tessera library index`, then the engine jobs (a) and (b) of BENCHMARKS.md rendered from it
# with `tessera render -l INDEX --metrics`, next to the same jobs on the Noto emoji and the
# 7,425 photo crops, in the same run.
#
# usage: scripts/bench-large-library.sh [WORK_DIR]     (default target/bench-large-library)
# env:   DATA=DIR     benchmark data as scripts/fetch-data.sh writes it (default data; fetched
#                     when tiles/photos is missing)
#        TILES=N      tiles of the large library (default 100000)
#        RUNS=N       runs of every import and render; times are their medians (default 3)
#        TESSERA=PATH the tessera binary (default: built here in release)
# Makes the large library with scripts/make-crops.py (--total: JPEG crops of 64 px at seeded
# offsets and scales of the photos, duplicates skipped) in a Python venv under WORK_DIR with
# Pillow; installs GNU time from Debian when /usr/bin/time is missing. The tiles and indexes
# stay in WORK_DIR (kept between runs). Prints Markdown tables (also WORK_DIR/table.md).
set -euo pipefail
cd "$(dirname "$0")/.."

WORK=${1:-target/bench-large-library}
DATA=${DATA:-data}
TILES=${TILES:-100000}
RUNS=${RUNS:-3}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BENCH_DIR=$WORK
. scripts/bench-lib.sh

[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA"
TARGET="$DATA/targets/skimage_astronaut.png"
[ -f "$TARGET" ] || { echo "missing $TARGET" >&2; exit 1; }
if [ ! -x /usr/bin/time ]; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get install -y time || { $SUDO apt-get update && $SUDO apt-get install -y time; }
fi

release_build
cargo build --release -p tessera-engine --example library-memory
LIBRARY_MEMORY="$CARGO_TARGET_DIR/release/examples/library-memory"

# The libraries: name and folder. The crops are made once (the count is checked every run).
LARGE="$WORK/photo-crops-$TILES"
if [ "$(find "$LARGE" -maxdepth 1 -name '*.jpg' 2>/dev/null | wc -l)" != "$TILES" ]; then
    rm -rf "$LARGE"
    crops --total "$TILES" "$DATA/tiles/photos" "$LARGE" 64
fi
photo_crops "$DATA"
LIBS=(emoji crops large)
declare -A DIR=([emoji]="$DATA/tiles/emoji-noto" [crops]="$DATA/tiles/photo-crops" [large]="$LARGE")

# median V...: the median of the numbers given.
median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# Every run does every step on every library in turn, so each run's ratios to the emoji share
# the machine's load of the moment. STEP names: index, a, b.
declare -A WALLS CPUS RSSS QUALITY
run_step() {
    local step=$1 lib=$2 run=$3 name="$2-$1-$3"
    case $step in
    index) measure "$name" "$TESSERA" library index "${DIR[$lib]}" -o "$WORK/$lib.idx" -q ;;
    a) measure "$name" "$TESSERA" render "$TARGET" -l "$WORK/$lib.idx" -o "$WORK/$lib-a.png" -q \
        --cells 128 --tile-size 16 --repeat-radius 1 --metrics ;;
    b) measure "$name" "$TESSERA" render "$TARGET" -l "$WORK/$lib.idx" -o "$WORK/$lib-b.png" -q \
        --per-pixel --tile-size 16 --repeat-radius 1 --metrics ;;
    esac
    WALLS[$lib-$step]+="$WALL "
    CPUS[$lib-$step]+="$CPU "
    RSSS[$lib-$step]+="$RSS "
    [ "$step" = index ] || QUALITY[$lib-$step]=$(grep -o 'de00_mean=.*' "$WORK/$name.log")
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2
for run in $(seq 1 "$RUNS"); do
    for step in index a b; do
        for lib in "${LIBS[@]}"; do
            run_step "$step" "$lib" "$run"
            echo "run $run $step $lib: ${WALL} s, ${CPU} s CPU, ${RSS} MB" >&2
        done
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# field KEY=VALUE-LINE NAME: one figure of a quality line.
field() { sed -E "s/.*(^| )$2=([^ ]+).*/\2/" <<< "$1"; }

{
    echo "| library | tiles | index MB | step | wall s, median (runs) | vs emoji, median of per-run ratios | CPU s | peak RSS MB (runs) | mean CIEDE2000 | ssim_view | distinct tiles | within 1 | within 5 |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for step in index a b; do
        for lib in "${LIBS[@]}"; do
            read -r -a walls <<< "${WALLS[$lib-$step]}"
            read -r -a base <<< "${WALLS[emoji-$step]}"
            ratios=()
            for i in "${!walls[@]}"; do ratios+=("$(awk "BEGIN {printf \"%.2f\", ${walls[$i]} / ${base[$i]}}")"); done
            tiles=$("$LIBRARY_MEMORY" "$WORK/$lib.idx" | sed -E 's/.*tiles=([0-9]+).*/\1/')
            size=$(awk "BEGIN {printf \"%.1f\", $(stat -c %s "$WORK/$lib.idx") / 1e6}")
            q="${QUALITY[$lib-$step]:-}"
            if [ -n "$q" ]; then
                quality="$(field "$q" de00_mean) | $(field "$q" ssim_view) | $(field "$q" distinct) | $(field "$q" dup_r1) | $(field "$q" dup_r5)"
            else
                quality=" | | | | "
            fi
            printf '| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |\n' "$lib" "$tiles" "$size" "$step" \
                "$(median "${walls[@]}")" "${walls[*]}" "$(median "${ratios[@]}")" \
                "$(median ${CPUS[$lib-$step]})" "${RSSS[$lib-$step]% }" "$quality"
        done
    done
    echo
    echo "The index as the image processors' library cache holds it (Library::from_vec on the blob):"
    echo
    for lib in "${LIBS[@]}"; do
        echo "- $lib: $("$LIBRARY_MEMORY" "$WORK/$lib.idx")"
    done
} > "$WORK/table.md"
echo
cat "$WORK/table.md"
