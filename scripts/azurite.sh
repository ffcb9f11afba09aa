#!/usr/bin/env bash
# Azurite, the Azure Storage emulator, for Tessera's tests and a developer's machine.
#
#   scripts/azurite.sh install   npm ci of the pinned Azurite in tools/azurite (idempotent)
#   scripts/azurite.sh start     start it on 127.0.0.1 on an empty data folder, wait until it answers
#   scripts/azurite.sh stop      stop the server started by `start`
#   scripts/azurite.sh status    say whether it runs
#   scripts/azurite.sh python    create .tools/venv with the pinned Python Azure SDK (interop tests)
#
# Ports: AZURITE_BLOB_PORT (10000), AZURITE_QUEUE_PORT (10001), AZURITE_TABLE_PORT (10002).
# With the default ports, TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true reaches it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PKG="$ROOT/tools/azurite"
STATE="$ROOT/.tools/azurite"
PID_FILE="$STATE/azurite-${AZURITE_BLOB_PORT:-10000}.pid"
LOG_FILE="$STATE/azurite-${AZURITE_BLOB_PORT:-10000}.log"
VENV="$ROOT/.tools/venv"
# Its data, gone with each start and stop: in memory's file system when it has 4 GB free.
shm_free_kb() { df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }'; }
if [[ -d /dev/shm && -w /dev/shm && "$(shm_free_kb)" -ge 4000000 ]]; then
    DATA="/dev/shm/tessera-azurite-${AZURITE_BLOB_PORT:-10000}"
else
    DATA="$STATE/data-${AZURITE_BLOB_PORT:-10000}"
fi
BLOB_PORT="${AZURITE_BLOB_PORT:-10000}"
QUEUE_PORT="${AZURITE_QUEUE_PORT:-10001}"
TABLE_PORT="${AZURITE_TABLE_PORT:-10002}"

log() { echo "azurite.sh: $*" >&2; }

running_pid() {
    [[ -f "$PID_FILE" ]] || return 1
    local pid
    pid="$(cat "$PID_FILE")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

port_answers() {
    # bash's /dev/tcp: no extra tool needed.
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

cmd_install() {
    local stamp="$PKG/node_modules/.tessera-lock.sha256"
    local want
    want="$(sha256sum "$PKG/package-lock.json" | cut -d' ' -f1)"
    if [[ -x "$PKG/node_modules/.bin/azurite" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "Azurite $(node -p "require('$PKG/node_modules/azurite/package.json').version") already installed"
        return 0
    fi
    command -v npm >/dev/null || { log "npm not found: install Node.js 20 or later"; exit 1; }
    log "installing the pinned Azurite (npm ci in tools/azurite)"
    # Azurite 3.37's engines field asks for a newer Node than 20, on which it runs fine.
    (cd "$PKG" && npm ci --no-audit --no-fund --engine-strict=false --loglevel=error)
    echo "$want" >"$stamp"
}

cmd_start() {
    if pid="$(running_pid)"; then
        log "already running (pid $pid)"
        return 0
    fi
    [[ -x "$PKG/node_modules/.bin/azurite" ]] || { log "not installed: run scripts/azurite.sh install"; exit 1; }
    for port in "$BLOB_PORT" "$QUEUE_PORT" "$TABLE_PORT"; do
        if port_answers "$port"; then
            log "port $port is already taken: stop whatever listens there or set AZURITE_*_PORT"
            exit 1
        fi
    done
    mkdir -p "$STATE"
    # Each start begins empty. The data are kept in files (in memory's file system when the
    # machine has one), not with --inMemoryPersistence: in memory, every blob and message
    # written is an extent of its own, and Azurite's collector removes the dead ones one at a
    # time, re-indexing all of them for each; after a test run's tens of thousands of writes
    # that holds its one thread for many minutes and every request times out. In files, the
    # writes share extents of 64 MB, and few are ever removed.
    rm -rf "$DATA"
    mkdir -p "$DATA"
    # Started directly, not through npx: stopping a wrapper would leave the server running.
    # --disableTelemetry: otherwise Azurite tries to reach the internet.
    # --skipApiVersionCheck: the SDKs speak newer API versions than this Azurite knows.
    nohup "$PKG/node_modules/.bin/azurite" \
        --silent \
        --location "$DATA" \
        --disableTelemetry \
        --skipApiVersionCheck \
        --blobHost 127.0.0.1 --blobPort "$BLOB_PORT" \
        --queueHost 127.0.0.1 --queuePort "$QUEUE_PORT" \
        --tableHost 127.0.0.1 --tablePort "$TABLE_PORT" \
        >"$LOG_FILE" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$PID_FILE"
    for _ in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "Azurite exited at start; its log:"
            cat "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            exit 1
        fi
        if port_answers "$BLOB_PORT" && port_answers "$QUEUE_PORT"; then
            log "running (pid $pid): blobs on 127.0.0.1:$BLOB_PORT, queues on 127.0.0.1:$QUEUE_PORT"
            return 0
        fi
        sleep 0.1
    done
    log "Azurite did not answer within 30 s; its log:"
    cat "$LOG_FILE" >&2
    kill "$pid" 2>/dev/null || true
    rm -f "$PID_FILE"
    exit 1
}

cmd_stop() {
    local pid
    if ! pid="$(running_pid)"; then
        log "not running"
        rm -f "$PID_FILE"
        return 0
    fi
    kill "$pid"
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid still alive after 10 s, killing it"
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PID_FILE"
    rm -rf "$DATA"
    log "stopped (pid $pid)"
}

cmd_status() {
    if pid="$(running_pid)"; then
        echo "running (pid $pid)"
    else
        echo "not running"
        return 1
    fi
}

cmd_python() {
    local req="$ROOT/tests/interop/requirements.txt"
    local stamp="$VENV/.tessera-requirements.sha256"
    local want
    want="$(sha256sum "$req" | cut -d' ' -f1)"
    if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "Python venv ready at .tools/venv"
        return 0
    fi
    command -v python3 >/dev/null || { log "python3 not found"; exit 1; }
    log "creating .tools/venv with the pinned Python Azure SDK"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
    echo "$want" >"$stamp"
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    python) cmd_python ;;
    *)
        echo "usage: $0 install|start|stop|status|python" >&2
        exit 2
        ;;
esac
