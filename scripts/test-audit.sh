#!/usr/bin/env bash
# The UI audit against a running Tessera: Lighthouse on the home, job and libraries pages as a
# phone and as a desktop (performance >= 90, accessibility and best practices >= 95) and axe-core
# on every page at both sizes (an event's contribute page too) (no serious or critical violation), in Debian's Chromium.
#
# Starts `tessera serve` (TESSERA_BIN, default the debug build in cargo's target directory) on the embedded backend in a
# temporary folder with the fixture tiles, makes one mosaic so the job page shows a finished job,
# then runs tests/audit/audit.mjs (npm ci in tests/audit first). Prints "audit: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/suites.sh
BIN=${TESSERA_BIN:-$(tessera_bin debug)}
[ -x "$BIN" ] || { echo "test-audit.sh: no binary at $BIN (cargo build first)" >&2; exit 2; }
[ -x /usr/bin/chromium ] || { echo "test-audit.sh: needs Chromium at /usr/bin/chromium" >&2; exit 2; }
command -v node >/dev/null || { echo "test-audit.sh: needs Node.js" >&2; exit 2; }
[ -d tests/audit/node_modules/lighthouse ] || (cd tests/audit && npm ci --no-audit --no-fund --loglevel=error >&2)

. scripts/local-server.sh
work=$(mktemp -d)
trap 'kill "${SERVER:-}" 2>/dev/null; wait "${SERVER:-}" 2>/dev/null; rm -rf "$work"' EXIT
TESSERA_LOG=warn start_server "$BIN" "$work" tests/fixtures/engine/tiles Emoji
job=$(submit_job tests/fixtures/engine/astronaut-48.png cells=48 repeat_radius=0)
wait_for_job "$job" 120 0.2
# An event, for its contribute page (what a guest opens on a phone).
AUDIT_CONTRIBUTE=$(curl -sf -F name="Audit event" -F image=@tests/fixtures/engine/astronaut-48.png \
    "$BASE/api/v1/events" | python3 -c 'import json, sys; print(json.load(sys.stdin)["contribute_url"])')
# A board, for its printer station's page (opened by its link) and its guests' page.
owner=$(python3 -c 'import uuid; print(uuid.uuid4())')
board=$(curl -sf -H "X-Client-Id: $owner" -F name="Audit board" -F board_cols=8 -F board_rows=6 \
    -F image=@tests/fixtures/engine/astronaut-48.png "$BASE/api/v1/events")
AUDIT_BOARD=$(echo "$board" | python3 -c 'import json, sys; print(json.load(sys.stdin)["contribute_url"])')
board_id=$(echo "$board" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
AUDIT_PRINTER=$(curl -sf -X POST -H "X-Client-Id: $owner" "$BASE/api/v1/events/$board_id/printer" |
    python3 -c 'import json, sys; u = json.load(sys.stdin)["url"]; print(u[u.index("/events/"):])')
export AUDIT_CONTRIBUTE AUDIT_BOARD AUDIT_PRINTER
node tests/audit/audit.mjs "$BASE" "$job" target/audit
