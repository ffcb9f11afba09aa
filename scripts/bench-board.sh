#!/usr/bin/env bash
# A board filled as a venue fills it (scripts/bench-board.py): a COLS x ROWS board over a
# photo, PHOTOS of the guest-photo crops sent and prepared, then approved at RATE a second,
# each approval placing its photo at once. Prints the placement's p50/p95 by tenth of the board
# filled and the board's colour error against the best assignment made at the end. One
# `tessera serve` on the embedded backend.
#
# usage: scripts/bench-board.sh DATA [PHOTOS] [COLS] [ROWS] [RATE]   (default 6000 100 60 20)
# env:   TESSERA=PATH  the binary (default: built here in release)
#        CROPS=DIR     the photos (default: DATA/guest-photos-PHOTOS-512, made when missing)
#        CAP=DE        the board's colour shift cap (default 10)
#        OPTIMUM=0     skip the best assignment at the end (minutes at 6,000 cells)
#        TARGET=FILE   the board's picture (default DATA/targets/lomiri_sunset_by_Aitzol_Berasategi.jpg)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:?usage: scripts/bench-board.sh DATA [PHOTOS] [COLS] [ROWS] [RATE]}
PHOTOS=${2:-6000}; COLS=${3:-100}; ROWS=${4:-60}; RATE=${5:-20}
OUT=${OUT:-target/bench-board}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH_DIR=$OUT
. scripts/bench-lib.sh
[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA" --no-emoji
release_build
CROPS=${CROPS:-$DATA/guest-photos-$PHOTOS-512}
[ -d "$CROPS" ] || crops --total "$PHOTOS" "$DATA/tiles/photos" "$CROPS" 512 >&2
bench_venv numpy scipy scikit-image pillow
TARGET=${TARGET:-$DATA/targets/lomiri_sunset_by_Aitzol_Berasategi.jpg}
. scripts/local-server.sh
WORK=$(mktemp -d)
trap 'kill "${SERVER:-}" 2>/dev/null; wait "${SERVER:-}" 2>/dev/null; rm -rf "$WORK"' EXIT
export TESSERA_LOG=warn
export TESSERA_WEB__GUESTS__PHOTOS_PER_MINUTE_PER_ADDRESS=0
export TESSERA_WEB__GUESTS__PHOTOS_PER_MINUTE_PER_EVENT=0
start_server "$TESSERA" "$WORK" tests/fixtures/engine/tiles Emoji
echo "board $COLS x $ROWS, $PHOTOS photos of $CROPS, approved $RATE a second, cap ${CAP:-10}"
"$PY" scripts/bench-board.py "$BASE" "$TARGET" "$CROPS" "$PHOTOS" "$COLS" "$ROWS" "$RATE" "${CAP:-10}"
