#!/usr/bin/env bash
# Tessera on separate hosts: Azurite, the front end with the job controller, and two processor
# hosts, each in a network namespace of its own on a private bridge (10.213.47.0/24) that this
# script creates and removes. Checks wake-ups after a long idle across hosts, a processor host
# killed mid-job, and a processor host joining mid-job (tests/hosts/hosts.py).
#
# Needs root (ip netns, a bridge). Sets up Azurite (npm) and the Python venv (Pillow) itself.
# Usage: scripts/test-hosts.sh
#   TESSERA_BIN  the binary to run (default the debug build in cargo's target directory, which `cargo test` builds)
#   IDLE_SECS    how long the listeners stay idle before the timed job (default 150)
#   RUNS         repetitions of the idle/warm comparison, reported as medians (default 1)
#   ONE_HOST=1   every role in one namespace, the idle/warm comparison only (for reference)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "test-hosts.sh: needs root (network namespaces and a bridge)" >&2
  exit 2
fi
command -v ip >/dev/null || { echo "test-hosts.sh: needs ip (iproute2)" >&2; exit 2; }
. scripts/suites.sh
export TESSERA_BIN="${TESSERA_BIN:-$(tessera_bin debug)}"
[ -x "$TESSERA_BIN" ] || { echo "test-hosts.sh: no binary at $TESSERA_BIN (cargo build first)" >&2; exit 2; }

scripts/azurite.sh install >&2
scripts/azurite.sh python >&2
exec timeout --signal=INT --kill-after=30 $(( ${IDLE_SECS:-150} * ${RUNS:-1} + 900 )) \
  .tools/venv/bin/python tests/hosts/hosts.py
