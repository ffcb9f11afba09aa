#!/usr/bin/env bash
# An event's mosaic kept up as photos arrive (shared/engine/examples/event-keep.rs): PHOTOS
# photos (2,000 photo crops, made by scripts/make-crops.py from the data's photos) arrive BATCH
# at a time (50) on a grid of about CELLS cells (20,000), every photo at least once; each mosaic
# after the first starts from the last. Prints per batch the planning time, the cells changed
# and the mean CIEDE2000 on the cell grid, with a fresh mosaic of the same photos every tenth
# batch, then the median planning time and the peak memory.
# Usage: scripts/bench-event.sh DATA [PHOTOS] [BATCH] [CELLS]   (DATA: scripts/fetch-data.sh's)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:?usage: scripts/bench-event.sh DATA [PHOTOS] [BATCH] [CELLS]}
PHOTOS=${2:-2000}; BATCH=${3:-50}; CELLS=${4:-20000}
TARGET="$DATA/targets/lomiri_seeding_by_Clements_Engelhardt.jpg"
[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA" --no-emoji
CROPS="$DATA/event-photos-$PHOTOS"
PY=python3
[ -x .tools/venv/bin/python ] && PY=.tools/venv/bin/python
[ -d "$CROPS" ] || "$PY" scripts/make-crops.py --total "$PHOTOS" "$DATA/tiles/photos" "$CROPS" >&2
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo build --release --quiet --bin tessera >&2
cargo build --release --quiet -p tessera-engine --example event-keep >&2
TARGET_DIR=${CARGO_TARGET_DIR:-target}
"$TARGET_DIR/release/tessera" library index "$CROPS" -o "$CROPS.idx" -q >&2
"$TARGET_DIR/release/examples/event-keep" "$TARGET" "$CROPS.idx" \
  --photos "$PHOTOS" --batch "$BATCH" --cells "$CELLS" --fresh-every 10
