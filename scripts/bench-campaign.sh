#!/usr/bin/env bash
# A campaign's event: PHOTOS photo crops (scripts/make-crops.py) sent by GUESTS guests at once,
# one photo a request (scripts/bench-guests.py), to one event that takes every photo at once
# (no approval, no per-guest cap). On the embedded backend one `tessera serve` runs every role;
# on Azurite the web, the controller and a processor are three processes (on the embedded
# backend with SPLIT=1, `serve` takes the photos and three processes on its data folder then
# make the mosaics, so that each role's memory is its own). Prints photos per
# second, p50/p95 per request by tenth of the run, refusals by status, how long the processors
# took to prepare every photo, storage transactions per photo (each role's /metrics), and each
# role's peak memory (VmHWM); then, unless MOSAIC=0, the event's mosaic of every photo, and
# with MORE=N, N more photos sent after it (of the PHOTOS crops, kept back) and the next mosaic.
#
# usage: scripts/bench-campaign.sh DATA [embedded|azurite] [PHOTOS] [GUESTS]
# env:   TESSERA=PATH  the binary (default: built here in release)
#        SIZE=PX       the crops' side (default 512)
#        MOSAIC=0      skip the mosaic
#        MORE=N        keep N of the photos back for a second mosaic (default 0)
#        LOGS=DIR      copy the roles' logs there when the bench ends
#        SPLIT=1       embedded: the mosaics made by web, controller and processor as three
#                      processes on serve's data folder (serve stopped once every photo is in)
# The guests all come from 127.0.0.1: the limits per address and per event (a campaign's
# guests come from many addresses, and its owner lifts the event's) are lifted.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:?usage: scripts/bench-campaign.sh DATA [embedded|azurite] [PHOTOS] [GUESTS]}
BACKEND=${2:-embedded}; PHOTOS=${3:-100000}; GUESTS=${4:-200}; SIZE=${SIZE:-512}
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
export TESSERA_WEB__GUESTS__PHOTOS_PER_MINUTE_PER_ADDRESS=0
export TESSERA_WEB__GUESTS__PHOTOS_PER_MINUTE_PER_EVENT=0
# A campaign's mosaic is a library of every photo: more than the 20,000 files an upload may have.
export TESSERA_WEB__MAX_LIBRARY_FILES=$((PHOTOS + 1000))
PIDS=(); ROLES=(); OPS=()
finish() {
    kill "${PIDS[@]}" 2>/dev/null
    [ -n "${LOGS:-}" ] && mkdir -p "$LOGS" && cp "$WORK"/*.log "$LOGS"/
    rm -rf "$WORK"
}
trap finish EXIT
BASE="http://127.0.0.1:$PORT"
# The web, the controller and a processor as three processes (on Azurite, or on the embedded
# store's data folder).
three_roles() {
    PIDS=(); ROLES=(); OPS=()
    "$TESSERA" "${STORE[@]}" web --port "$PORT" 2>> "$WORK/web.log" & PIDS+=($!)
    ROLES+=(web); OPS+=("$BASE")
    "$TESSERA" "${STORE[@]}" controller --ops-port 18491 2>> "$WORK/controller.log" & PIDS+=($!)
    ROLES+=(controller); OPS+=(http://127.0.0.1:18491)
    "$TESSERA" "${STORE[@]}" processor --ops-port 18492 2>> "$WORK/processor.log" & PIDS+=($!)
    ROLES+=(processor); OPS+=(http://127.0.0.1:18492)
    for _ in $(seq 150); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.2; done
}
STORE=(--data "$WORK/data")
if [ "$BACKEND" = azurite ]; then
    scripts/azurite.sh start >&2
    export TESSERA_STORAGE=azure TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true
    three_roles
else
    "$TESSERA" "${STORE[@]}" serve --port "$PORT" 2> "$WORK/serve.log" & PIDS+=($!)
    ROLES+=(serve); OPS+=("$BASE")
    for _ in $(seq 150); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.2; done
fi

# Storage transactions of every role, summed from their /metrics.
transactions() {
    local total=0 n
    for ops in "${OPS[@]}"; do
        n=$(curl -fs "$ops/metrics" | awk '/^tessera_storage_transactions_total/ {s += $2} END {printf "%d", s}')
        total=$((total + n))
    done
    echo "$total"
}
# The event's photos on each shelf, as its owner's view counts them.
counts() {
    curl -fs -H "X-Client-Id: $OWNER" "$BASE/api/v1/events/$ID" | "$PY" -c \
        'import json,sys; print(json.dumps(json.load(sys.stdin)["counts"]))'
}

OWNER=$(cat /proc/sys/kernel/random/uuid)
TARGET="$DATA/targets/lomiri_seeding_by_Clements_Engelhardt.jpg"
EVENT=$(curl -fs -H "X-Client-Id: $OWNER" -F name=Campaign -F approval=false -F per_guest=0 \
    -F max_photos=1000000 -F auto_after_seconds=0 -F screen=false -F "image=@$TARGET" "$BASE/api/v1/events")
ID=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<< "$EVENT")
TOKEN=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["contribute_token"])' <<< "$EVENT")
echo "backend $BACKEND, $PHOTOS photos of $SIZE px, $GUESTS guests at once"
BEFORE=$(transactions)
T0=$(date +%s.%N)
# The photos sent first, and those kept back for the second mosaic (MORE).
MORE=${MORE:-0}
mkdir "$WORK/first" "$WORK/more"
ls "$CROPS" | sort | head -n $((PHOTOS - MORE)) | while read -r f; do ln -s "$CROPS/$f" "$WORK/first/$f"; done
ls "$CROPS" | sort | tail -n "$MORE" | while read -r f; do ln -s "$CROPS/$f" "$WORK/more/$f"; done
# Every photo prepared: the photorequest queue empty (its depth is one cheap read; the
# owner's view lists every shelf).
all_prepared() {
    while :; do
        # A request refused for a moment (the roles' processes share one queue file on the
        # embedded store) is asked again.
        DEPTH=$( (curl -fs "$BASE/api/v1/queues" || true) | "$PY" -c \
            'import json,sys
try: print(next(q["depth"] for q in json.load(sys.stdin)["queues"] if q["name"] == "photorequest"))
except ValueError: print("unknown")')
        [ "$DEPTH" = 0 ] && break
        sleep 2
    done
}
"$PY" scripts/bench-guests.py "$BASE" "$ID" "$TOKEN" "$WORK/first" "$GUESTS"
T1=$(date +%s.%N)
all_prepared
C=$(counts)
T2=$(date +%s.%N)
AFTER=$(transactions)
echo "every photo prepared $("$PY" -c "print(f'{$T2 - $T1:.1f}')") s after the last was sent ($("$PY" -c "print(f'{$T2 - $T0:.1f}')") s from the first): $C"
echo "storage transactions per photo (taken and prepared, every role): $("$PY" -c "print(f'{($AFTER - $BEFORE) / ($PHOTOS - $MORE):.1f}')")"
for i in "${!PIDS[@]}"; do
    echo "peak memory of ${ROLES[$i]}: $(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/${PIDS[$i]}/status")"
done
[ "${MOSAIC:-1}" = 0 ] && exit 0
if [ "$BACKEND" = embedded ] && [ "${SPLIT:-0}" = 1 ]; then
    kill "${PIDS[@]}"; wait "${PIDS[@]}" 2>/dev/null || true
    echo "serve stopped: the mosaics by web, controller and processor as three processes"
    three_roles
fi

# The event's mosaic of every photo, through the queues: how long the web took to answer, and
# how long to the mosaic done.
mosaic() {
    local t0 t1 t2 job state
    t0=$(date +%s.%N)
    job=$(curl -fs -X POST -H "X-Client-Id: $OWNER" "$BASE/api/v1/events/$ID/mosaic" \
        | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["job"])')
    t1=$(date +%s.%N)
    while :; do
        state=$(curl -fs -H "X-Client-Id: $OWNER" "$BASE/api/v1/jobs/$job" \
            | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["state"], j.get("output"), j.get("kept") or "", j.get("error") or "")')
        case "$state" in done*|failed*|cancelled*) break ;; esac
        sleep 0.5
    done
    t2=$(date +%s.%N)
    echo "mosaic of $1: answered in $("$PY" -c "print(f'{$t1 - $t0:.2f}')") s, $state in $("$PY" -c "print(f'{$t2 - $t0:.1f}')") s (asked to done)"
}
mosaic "every photo"
for i in "${!PIDS[@]}"; do
    echo "peak memory of ${ROLES[$i]}: $(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/${PIDS[$i]}/status")"
done
[ "$MORE" -gt 0 ] || exit 0
"$PY" scripts/bench-guests.py "$BASE" "$ID" "$TOKEN" "$WORK/more" "$GUESTS"
all_prepared
BEFORE=$(transactions)
mosaic "$MORE more"
AFTER=$(transactions)
echo "storage transactions of the second mosaic (every role): $((AFTER - BEFORE))"
for i in "${!PIDS[@]}"; do
    echo "peak memory of ${ROLES[$i]}: $(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/${PIDS[$i]}/status")"
done
