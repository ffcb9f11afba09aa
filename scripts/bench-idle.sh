#!/usr/bin/env bash
# What idle costs, judged by the storage service's own log: `tessera serve` on an Azurite with a
# debug log runs a job, settles, then idles; its transaction counters must equal the log's
# requests, and the figure per listener-hour is printed with the requests by kind.
#
# usage: scripts/bench-idle.sh
# env:   SETTLE_SECS=N   wait after the job before the window (default 300)
#        IDLE_SECS=N     the idle window (default 1200: twenty minutes)
# It is the test `transaction_counts::transactions_counted_equal_azurites_log_for_a_job_and_when_idle` with a
# long window (CI runs it with 45 s).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/azurite.sh install
export TESSERA_COSTS_SETTLE_SECS=${SETTLE_SECS:-300}
export TESSERA_COSTS_IDLE_SECS=${IDLE_SECS:-1200}
cargo test --test it transaction_counts:: -- --nocapture 2>&1 | grep -E "^(job|idle):|test result|panicked|assert"
