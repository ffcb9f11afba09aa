#!/usr/bin/env bash
# A soak run (tests/soak/soak.py): Tessera as separate processes (web, controller, two processors)
# on Azurite, JOBS jobs submitted over MINUTES minutes while processors are killed and restarted
# at random, the controller is killed once and Azurite is frozen for 10 s once. Every job must end
# done and identical to `tessera render`, or failed with a reason; afterwards every queue is empty
# and no intermediate remains. Prints jobs, kills, time, transactions per job and bytes left.
#
# Sets up Azurite (npm) and the Python venv (Pillow) itself; builds the release binary if missing.
# Usage: scripts/soak.sh            JOBS (30), MINUTES (3), SEED (7), TESSERA_BIN
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/suites.sh
ensure_build_deps
if [ -z "${TESSERA_BIN:-}" ]; then
  cargo build --release --bin tessera
  TESSERA_BIN=$(tessera_bin release)
fi
export TESSERA_BIN
scripts/azurite.sh install >&2
scripts/azurite.sh python >&2
exec .tools/venv/bin/python tests/soak/soak.py
