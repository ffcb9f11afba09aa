#!/usr/bin/env bash
# A campaign's guests at once: the web front end, the job controller and an image processor as
# three processes on the embedded backend, an event, GUESTS guests each sending its share of
# PHOTOS photo crops one photo a request (scripts/bench-guests.py), then the event's mosaic of
# every photo. Prints photos per second, p50/p95 by tenth of the run, refusals by status, the
# mosaic's time and each role's peak memory (VmHWM).
#
# usage: scripts/bench-guests.sh DATA [GUESTS] [PHOTOS]   (DATA: scripts/fetch-data.sh's)
# env:   TESSERA=PATH  the binary (default: built here in release)
#        SIZE=PX       the crops' side (default 1024, about what the contribute page sends)
# The guests all come from 127.0.0.1: the limits per address (a campaign's guests come from
# many) are lifted to the event's; the event's own limits stay at their defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:?usage: scripts/bench-guests.sh DATA [GUESTS] [PHOTOS]}
GUESTS=${2:-120}; PHOTOS=${3:-3000}; SIZE=${SIZE:-1024}
[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA" --no-emoji
PY=python3
[ -x .tools/venv/bin/python ] && PY=.tools/venv/bin/python
CROPS="$DATA/guest-photos-$PHOTOS-$SIZE"
[ -d "$CROPS" ] || "$PY" scripts/make-crops.py --total "$PHOTOS" "$DATA/tiles/photos" "$CROPS" "$SIZE" >&2
if [ -z "${TESSERA:-}" ]; then
    cargo build --release --quiet --bin tessera >&2
    TESSERA=${CARGO_TARGET_DIR:-target}/release/tessera
fi
WORK=$(mktemp -d)
PORT=${PORT:-18480}
export TESSERA_LOG=warn
export TESSERA_WEB__GUESTS__PHOTOS_PER_MINUTE_PER_ADDRESS=12000
export TESSERA_WEB__GUESTS__PHOTO_BURST_PER_ADDRESS=3000
export TESSERA_WEB__GUESTS__DECODES_PER_ADDRESS=4
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
"$TESSERA" --data "$WORK/data" web --port "$PORT" 2> "$WORK/web.log" & PIDS+=($!)
"$TESSERA" --data "$WORK/data" controller 2> "$WORK/controller.log" & PIDS+=($!)
"$TESSERA" --data "$WORK/data" processor 2> "$WORK/processor.log" & PIDS+=($!)
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 100); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.2; done
OWNER=$(cat /proc/sys/kernel/random/uuid)
TARGET="$DATA/targets/lomiri_seeding_by_Clements_Engelhardt.jpg"
EVENT=$(curl -fs -H "X-Client-Id: $OWNER" -F name=Campaign -F approval=false -F per_guest=0 \
    -F max_photos=100000 -F "image=@$TARGET" "$BASE/api/v1/events")
ID=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<< "$EVENT")
TOKEN=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["contribute_token"])' <<< "$EVENT")
"$PY" scripts/bench-guests.py "$BASE" "$ID" "$TOKEN" "$CROPS" "$GUESTS"

# The event's mosaic of every photo, through the queues.
T0=$(date +%s.%N)
JOB=$(curl -fs -X POST -H "X-Client-Id: $OWNER" "$BASE/api/v1/events/$ID/mosaic" \
    | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["job"])')
while :; do
    STATE=$(curl -fs -H "X-Client-Id: $OWNER" "$BASE/api/v1/jobs/$JOB" \
        | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["state"], j.get("output"))')
    case "$STATE" in done*|failed*|cancelled*) break ;; esac
    sleep 0.5
done
T1=$(date +%s.%N)
echo "mosaic of every photo: $STATE in $("$PY" -c "print(f'{$T1 - $T0:.1f}')") s (asked to done)"
for i in 0 1 2; do
    ROLE=$(echo web controller processor | cut -d' ' -f$((i + 1)))
    echo "peak memory of $ROLE: $(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/${PIDS[$i]}/status")"
done
