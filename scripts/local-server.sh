# Helpers for scripts that run a local `tessera serve` and send it jobs; source this file.

# start_server BIN WORK LIBRARY_DIR LIBRARY_NAME: starts `BIN serve` on a free port, its data in
# WORK/data and its log in WORK/serve.log, with LIBRARY_DIR as the default library; sets SERVER
# (its pid) and BASE (its URL) and returns once it answers /readyz. Fails, showing the log, if
# it stops or is not ready within 2 minutes.
start_server() {
    local bin=$1 work=$2 library=$3 name=$4 port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin" serve --data "$work/data" --port "$port" \
        --default-library "$library" --default-library-name "$name" >"$work/serve.log" 2>&1 &
    SERVER=$!
    BASE="http://127.0.0.1:$port"
    for _ in $(seq 1 600); do
        curl -sf "$BASE/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$SERVER" 2>/dev/null || break
        sleep 0.2
    done
    echo "tessera serve did not become ready; its log:" >&2
    cat "$work/serve.log" >&2
    return 1
}

# submit_job IMAGE [FIELD=VALUE...]: sends a job to $BASE; prints its id.
submit_job() {
    local form=(-F "image=@$1") field
    shift
    for field in "$@"; do form+=(-F "$field"); done
    curl -sf "${form[@]}" "$BASE/api/v1/jobs" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

# wait_for_job JOB DEADLINE_S INTERVAL_S: returns once the job is done, asking every INTERVAL_S
# seconds; fails if the job failed or is not done within DEADLINE_S seconds.
wait_for_job() {
    local job=$1 deadline=$2 interval=$3 started state
    started=$(date +%s)
    while :; do
        state=$(curl -sf "$BASE/api/v1/jobs/$job" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
        [ "$state" = done ] && return 0
        [ "$state" = failed ] && { echo "job $job failed" >&2; return 1; }
        [ $(( $(date +%s) - started )) -lt "$deadline" ] || { echo "job $job did not finish in $deadline s" >&2; return 1; }
        sleep "$interval"
    done
}
