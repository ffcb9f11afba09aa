#!/usr/bin/env bash
# The pipeline benchmark: job (b) of the engine benchmark (the astronaut, 512 x 512 cells of 16 px,
# the emoji library) end to end through the queues, against `tessera render` on the same machine in
# the same run:
#   - `tessera serve` (every role in one process, embedded storage);
#   - separate `tessera web`, `tessera controller` and one, then two, `tessera processor` processes
#     on Azurite (started here on its own ports, stopped at the end).
# The job's time runs from the upload (POST /api/v1/jobs) to the moment its record says done; the
# storage transactions are the job record's, by role; peak memory is each process's high-water
# resident set (VmHWM).
#
# usage: scripts/bench-pipeline.sh [DATA_DIR]      (DATA_DIR as for scripts/bench-engine.sh)
# env:   OUT=DIR      work and result folder (default target/bench-pipeline)
#        TESSERA=PATH the tessera binary (default: built here in release)
#        CELLS=512 TILE=16 SLICES=16   the job
#        TARGET=PATH                   the photo (default: the astronaut)
#        SIZES="512 1024"              the serve rows' cells across (default CELLS and twice it)
#        SKIP_AZURITE=1                the serve row only
# Prints a Markdown table (also written to $OUT/table.md) for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
OUT=${OUT:-target/bench-pipeline}
CELLS=${CELLS:-512}
TILE=${TILE:-16}
SLICES=${SLICES:-16}
PORT=${PORT:-18080}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

if [ ! -d "$DATA/tiles/emoji-noto" ]; then
    scripts/fetch-data.sh "$DATA"
fi
LIBRARY="$DATA/tiles/emoji-noto"
TARGET=${TARGET:-$DATA/targets/skimage_astronaut.png}
[ -f "$TARGET" ] || { echo "missing $TARGET" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }

. scripts/bench-lib.sh
release_build
export TESSERA_LOG=${TESSERA_LOG:-warn}

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "${AZURITE_STARTED:-}" ]; then
        AZURITE_BLOB_PORT=12000 AZURITE_QUEUE_PORT=12001 AZURITE_TABLE_PORT=12002 scripts/azurite.sh stop || true
    fi
}
trap cleanup EXIT

now() { date +%s.%N; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
peak_mb() { awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

wait_http() {
    for _ in $(seq 1 300); do
        curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return 0
        sleep 0.1
    done
    echo "nothing answers on port $1" >&2
    exit 1
}

# submit PORT: uploads the job, waits until it ends; sets SECONDS_TAKEN and TRANSACTIONS.
submit() {
    local port=$1 started id state view
    started=$(now)
    id=$(curl -sf -F "image=@$TARGET" -F library=emoji -F "tile_size=$TILE" -F "cells=$CELLS" \
        -F "slices=$SLICES" -F allow_large=true -F format=png "http://127.0.0.1:$port/api/v1/jobs" | json 'd["id"]')
    # Polled with curl alone: a Python start per poll would take a core from the job. A job that
    # hangs ends the run after JOB_DEADLINE seconds (default 600) instead of polling forever.
    local deadline=$(( $(date +%s) + ${JOB_DEADLINE:-600} ))
    while :; do
        view=$(curl -sf "http://127.0.0.1:$port/api/v1/jobs/$id")
        case $view in
            *'"state":"done"'*) break ;;
            *'"state":"failed"'*) echo "job failed: $view" >&2; exit 1 ;;
        esac
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "job $id not done within ${JOB_DEADLINE:-600} s: $view" >&2
            exit 1
        fi
        sleep 0.05
    done
    SECONDS_TAKEN=$(awk "BEGIN {printf \"%.2f\", $(now) - $started}")
    TRANSACTIONS=$(json '", ".join(f"{k} {v}" for k, v in sorted(d.get("transactions", {}).items()))' <<< "$view")
    curl -sf -o "$OUT/$2.png" "http://127.0.0.1:$port/api/v1/jobs/$id/result"
}

TABLE="$OUT/table.md"
{
    echo "| run | job time (s) | vs render | peak memory per process (MB) | storage transactions of the job |"
    echo "|---|---|---|---|---|"
} > "$TABLE"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The reference: one process, the library read from an index (imported beforehand, as below).
"$TESSERA" library index "$LIBRARY" -o "$OUT/emoji.idx" -q
# render CELLS: sets RENDER (seconds) and RENDER_RSS (MB).
render() {
    /usr/bin/time -v -o "$OUT/render-$1.time" "$TESSERA" render "$TARGET" -l "$OUT/emoji.idx" \
        -o "$OUT/render-$1.png" --cells "$1" --tile-size "$TILE" --allow-large -q > "$OUT/render-$1.log" 2>&1
    RENDER=$(awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s }' "$OUT/render-$1.time")
    RENDER_RSS=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$OUT/render-$1.time")
}
ratio() { awk "BEGIN {printf \"%.2f\", $1 / $2}"; }

# Every role in one process on the embedded backend: job (b), then the same at twice the cells
# across (four times the pixels), each after a render of the same job; the serve process's peak
# is read after each job, so memory bounded by a band shows as a flat peak.
rm -rf "$OUT/serve-data"
"$TESSERA" --data "$OUT/serve-data" library import "$LIBRARY" --name emoji > "$OUT/serve-import.log"
"$TESSERA" --data "$OUT/serve-data" serve --port "$PORT" > "$OUT/serve.log" 2>&1 &
SERVE=$!
PIDS+=("$SERVE")
wait_http "$PORT"
for cells in ${SIZES:-$CELLS $((CELLS * 2))}; do
    render "$cells"
    px=$(sed -nE 's/.*output ([0-9]+) x ([0-9]+) px.*/\1x\2/p' "$OUT/render-$cells.log" | head -1)
    echo "| \`tessera render\`, $px | $RENDER | 1.00 | $RENDER_RSS | none |" >> "$TABLE"
    CELLS=$cells submit "$PORT" "serve-$cells"
    echo "| \`tessera serve\` (embedded, $SLICES slices), $px | $SECONDS_TAKEN | $(ratio "$SECONDS_TAKEN" "$RENDER") | serve $(peak_mb "$SERVE") | $TRANSACTIONS |" >> "$TABLE"
    if [ "$cells" = "$CELLS" ]; then BASE_RENDER=$RENDER; fi
done
RENDER=$BASE_RENDER
kill "$SERVE"
wait "$SERVE" 2>/dev/null || true
PIDS=()

if [ -z "${SKIP_AZURITE:-}" ]; then
    export AZURITE_BLOB_PORT=12000 AZURITE_QUEUE_PORT=12001 AZURITE_TABLE_PORT=12002
    scripts/azurite.sh install
    scripts/azurite.sh start
    AZURITE_STARTED=1
    export TESSERA_STORAGE=azure
    export TESSERA_AZURE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:12000/devstoreaccount1;QueueEndpoint=http://127.0.0.1:12001/devstoreaccount1;"
    "$TESSERA" library import "$LIBRARY" --name emoji > "$OUT/azure-import.log"
    for n in 1 2; do
        TESSERA_WEB__PORT=$PORT "$TESSERA" web > "$OUT/web-$n.log" 2>&1 &
        WEB=$!
        "$TESSERA" controller > "$OUT/controller-$n.log" 2>&1 &
        CONTROLLER=$!
        PIDS=("$WEB" "$CONTROLLER")
        PROCESSORS=()
        for i in $(seq 1 "$n"); do
            TESSERA_PROCESSOR__ID="p$i" "$TESSERA" processor > "$OUT/processor-$n-$i.log" 2>&1 &
            PROCESSORS+=($!)
        done
        PIDS+=("${PROCESSORS[@]}")
        wait_http "$PORT"
        submit "$PORT" "azurite-$n"
        MEM="web $(peak_mb "$WEB"), controller $(peak_mb "$CONTROLLER")"
        for pid in "${PROCESSORS[@]}"; do MEM="$MEM, processor $(peak_mb "$pid")"; done
        echo "| Azurite, $n processor process(es), $SLICES slices | $SECONDS_TAKEN | $(ratio "$SECONDS_TAKEN" "$RENDER") | $MEM | $TRANSACTIONS |" >> "$TABLE"
        for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
        wait 2>/dev/null || true
        PIDS=()
    done
fi

cat "$TABLE"
