#!/usr/bin/env bash
# The UI audit against a running Tessera: Lighthouse on the home, job and libraries pages as a
# phone and as a desktop (performance >= 90, accessibility and best practices >= 95) and axe-core
# on every page at both sizes (no serious or critical violation), in Debian's Chromium.
#
# Starts `tessera serve` (TESSERA_BIN, default target/debug/tessera) on the embedded backend in a
# temporary folder with the fixture tiles, makes one mosaic so the job page shows a finished job,
# then runs tests/audit/audit.mjs (npm ci in tests/audit first). Prints "audit: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${TESSERA_BIN:-target/debug/tessera}
[ -x "$BIN" ] || { echo "test-audit.sh: no binary at $BIN (cargo build first)" >&2; exit 2; }
[ -x /usr/bin/chromium ] || { echo "test-audit.sh: needs Chromium at /usr/bin/chromium" >&2; exit 2; }
command -v node >/dev/null || { echo "test-audit.sh: needs Node.js" >&2; exit 2; }
[ -d tests/audit/node_modules/lighthouse ] || (cd tests/audit && npm ci --no-audit --no-fund --loglevel=error >&2)

work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TESSERA_LOG=warn "$BIN" serve --data "$work/data" --port "$port" \
    --default-library tests/fixtures/engine/tiles --default-library-name Emoji >"$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 1 300); do
    curl -sf "$base/readyz" >/dev/null 2>&1 && break
    sleep 0.2
done
job=$(curl -sf -F image=@tests/fixtures/engine/astronaut-48.png -F cells=48 -F repeat_radius=0 \
    "$base/api/v1/jobs" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
for _ in $(seq 1 600); do
    state=$(curl -sf "$base/api/v1/jobs/$job" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = done ] && break
    [ "$state" = failed ] && { echo "test-audit.sh: the job failed" >&2; exit 1; }
    sleep 0.2
done
[ "$state" = done ] || { echo "test-audit.sh: the job did not finish in 2 minutes" >&2; exit 1; }
node tests/audit/audit.mjs "$base" "$job" target/audit
