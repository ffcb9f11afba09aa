#!/usr/bin/env bash
# The viewer benchmark: time-to-sharp after a fast zoom on a 1-gigapixel mosaic.
#
# Makes the mosaic with `tessera serve` (release build, embedded storage in a temporary folder):
# the astronaut, 2048 x 2048 cells of 16 px of the Noto emoji, 32768 x 32768 px. Then runs
# scripts/bench-viewer.mjs against its job page in headless Chromium, zooming 24, 14 and 8 wheel
# notches, and prints each run and the medians.
#
# usage: scripts/bench-viewer.sh [DATA_DIR]     (DATA_DIR as for scripts/bench-engine.sh)
# env:   RUNS=N (default 5), TESSERA=PATH (default: built here in release), JOB_DEADLINE=SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
RUNS=${RUNS:-5}
JOB_DEADLINE=${JOB_DEADLINE:-1800}
if [ ! -d "$DATA/tiles/emoji-noto" ]; then
    scripts/fetch-data.sh "$DATA" --no-photos
fi
TARGET="$DATA/targets/skimage_astronaut.png"
[ -x /usr/bin/chromium ] || { echo "needs Chromium at /usr/bin/chromium (apt-get install chromium)" >&2; exit 1; }
(cd tests/audit && { [ -d node_modules/puppeteer-core ] || npm ci --no-audit --no-fund --loglevel=error; })

. scripts/bench-lib.sh
release_build

. scripts/local-server.sh
work=$(mktemp -d)
trap 'kill "${SERVER:-}" 2>/dev/null; wait "${SERVER:-}" 2>/dev/null; rm -rf "$work"' EXIT
start_server "$TESSERA" "$work" "$DATA/tiles/emoji-noto" "Noto Emoji"

job=$(submit_job "$TARGET" cells=2048 tile_size=16)
echo "job $job: 32768 x 32768 px, rendering..." >&2
started=$(date +%s)
wait_for_job "$job" "$JOB_DEADLINE" 2
size=$(curl -sfI "$BASE/api/v1/jobs/$job/result" | awk 'tolower($1) == "content-length:" { print $2 }' | tr -d '\r')
echo "done in $(( $(date +%s) - started )) s; the PNG is $(( size / 1000000 )) MB" >&2
# The web role makes the pyramid's upper levels once the job is done: measure after that, as a
# person opening the finished job a few seconds later would.
for _ in $(seq 1 300); do
    grep -q "upper pyramid levels" "$work/serve.log" && break
    sleep 1
done
grep "upper pyramid levels" "$work/serve.log" | sed 's/.*INFO //' >&2 || true
# Deep (full resolution), middle (level 2) and shallow (level 3) zooms.
for notches in 24 14 8; do
    NOTCHES=$notches node scripts/bench-viewer.mjs "$BASE" "$job" "$RUNS"
done
