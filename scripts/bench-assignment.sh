#!/usr/bin/env bash
# Capped assignments against their exact optimum: "each photo at most twice" and "at most twice,
# at least once" on the 7,425 photo crops, 8 px cells, colour only (`--form 0`), radius 1.
# The optimum (scripts/assignment-optimum.py, SciPy's linear_sum_assignment on the full cost
# matrix, no repeat radius) is a bound no plan can beat; each plan is priced by the same costs,
# and its mean CIEDE2000 by the quality metric is printed next to it.
#
# usage: scripts/bench-assignment.sh [DATA_DIR]     (default data/; fetched when missing)
# env:   OUT=DIR        work folder (default target/bench-assignment)
#        TESSERA=PATH   the tessera binary (default: built here in release)
#        PROBLEMS="..." which problems, as NAME:TARGET_FILE:COLS (default below): the tuned
#                       sunset and astronaut, and the china photo and coffee, never tuned on;
#                       grids of at least 7,425 cells, so that every tile fits for the floor
#        FLOOR=0        skip the floor jobs (their optimum takes about 20 minutes each)
# The exact optimum of the 128-cell-wide sunset takes 9 (at most) to 23 (with the floor) minutes
# and about 6 GB of memory on two cores, a 64-wide grid a minute or two (FLOOR=0 there: 64 x 64
# cells cannot hold every tile): a bench, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
OUT=${OUT:-target/bench-assignment}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_DIR=$OUT
. scripts/bench-lib.sh

[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA"
release_tessera
photo_crops "$DATA"
CROPS="$DATA/tiles/photo-crops"
bench_venv numpy scipy scikit-image pillow

[ -f "$OUT/crops.idx" ] || "$TESSERA" library index "$CROPS" -o "$OUT/crops.idx" -q
PROBLEMS=${PROBLEMS:-"sunset:lomiri_sunset_by_Aitzol_Berasategi.jpg:128 astronaut:skimage_astronaut.png:112 china:sklearn_china.jpg:112 coffee:skimage_coffee.png:112"}
JOBS=("2 0")
[ "${FLOOR:-1}" = 0 ] || JOBS+=("2 1")

ROWS="$OUT/rows.md"
: > "$ROWS"
for problem in $PROBLEMS; do
    IFS=: read -r name file cols <<< "$problem"
    target="$DATA/targets/$file"
    for job in "${JOBS[@]}"; do
        read -r max min <<< "$job"
        label="$name, at most $max$([ "$min" = 0 ] || echo ", at least $min")"
        out="$OUT/$name-$max-$min"
        measure "$name-$max-$min" "$TESSERA" render "$target" -l "$OUT/crops.idx" -o "$out.png" -q \
            --cells "$cols" --tile-size 8 --repeat-radius 1 --form 0 --max-uses "$max" --min-uses "$min" \
            --plan "$out.csv"
        rows=$(awk -F, 'NR > 1 && $1 > r { r = $1 } END { print r + 1 }' "$out.csv")
        metric=$("$METRICS" "$target" "$out.png" "$cols" "$rows" | sed -E 's/.*de00_mean=([0-9.]+).*/\1/')
        "$PY" scripts/assignment-optimum.py "$target" "$CROPS" "$cols" "$rows" "$max" "$min" "$out.csv" \
            > "$out.optimum"
        optimum=$(sed -nE 's/^optimum=([0-9.]+).*/\1/p' "$out.optimum")
        plan=$(sed -nE 's/^plan=([0-9.]+) above=([-0-9.]+%).*/\1 (+\2)/p' "$out.optimum")
        printf '| %s | %s x %s | %s | %s | %s | %s | %s |\n' "$label" "$cols" "$rows" "$optimum" \
            "$plan" "$metric" "$WALL" "$RSS" | tee -a "$ROWS"
    done
done
{
    echo "| job | grid | exact optimum | Tessera, same costs | Tessera, quality metric | wall s | peak RSS MB |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    cat "$ROWS"
} > "$OUT/table.md"
echo
cat "$OUT/table.md"
