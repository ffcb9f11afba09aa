#!/usr/bin/env bash
# Runs every Tessera test on a fresh machine, with its own set-up:
#   - libheif-dev from Debian's packages, which the build links against (scripts/build-deps.sh),
#   - Azurite (pinned, from the npm registry) started on 127.0.0.1 and stopped at the end,
#   - a Python virtual environment with Microsoft's azure-storage-queue SDK (interop tests),
#     prometheus_client, Pillow and pillow-heif (the photo corpus) and kubernetes-validate,
#   - the UI audit's npm packages (tests/audit: Lighthouse, axe-core),
#   - formatting, lint and documentation checks, then the whole cargo test suite against both
#     storage backends (with the browser tests and the Schemathesis run),
#   - the UI audit (scripts/test-audit.sh: Lighthouse and axe-core on every page),
#   - the deployment manifests' validation (scripts/test-deploy.sh),
#   - as root: the container test (scripts/test-container.sh: Docker from Debian's packages) and
#     the multi-host test (scripts/test-hosts.sh: network namespaces).
# Usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

# A fresh clone gains nothing from incremental compilation, whose caches take over 10 GB here.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step() { printf '\n== %s\n' "$*" >&2; }
. scripts/suites.sh

command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 not found: install Python 3" >&2; exit 2; }

step "libheif (HEIC and AVIF decoding; the build links it)"
. scripts/build-deps.sh
ensure_build_deps

step "Azurite and the Python SDK"
scripts/azurite.sh install
scripts/azurite.sh python
# An empty Azurite for each run: it re-indexes every blob it holds at each one deleted, so one
# that served runs before is slower the more it holds.
scripts/azurite.sh stop >/dev/null 2>&1 || true
scripts/azurite.sh start
trap 'scripts/azurite.sh stop' EXIT
# Always the local Azurite, never an account configured in the environment.
if [ -n "${AZURITE_BLOB_PORT:-}${AZURITE_QUEUE_PORT:-}" ]; then
  key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
  export TESSERA_AZURE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=http://127.0.0.1:${AZURITE_BLOB_PORT:-10000}/devstoreaccount1;QueueEndpoint=http://127.0.0.1:${AZURITE_QUEUE_PORT:-10001}/devstoreaccount1"
else
  export TESSERA_AZURE_CONNECTION_STRING="UseDevelopmentStorage=true"
fi
export TESSERA_TEST_PYTHON="$PWD/.tools/venv/bin/python"

step "Chromium and chromedriver (the browser test), poppler-utils (the boards' PDFs read back)"
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || [ ! -x /usr/bin/pdftoppm ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver poppler-utils
  else
    echo "Chromium or poppler-utils is missing: run as root, or: sudo apt-get install -y chromium chromium-driver poppler-utils" >&2
  fi
fi

step "the UI audit's npm packages (Lighthouse, axe-core)"
command -v npm >/dev/null || { echo "npm not found: install Node.js (the UI audit needs it)" >&2; exit 2; }
(cd tests/audit && npm ci --no-audit --no-fund --loglevel=error >&2)

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo doc (warnings denied: broken links fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "cargo test"
log=$(mktemp)
trap 'rm -f "$log"; scripts/azurite.sh stop >/dev/null 2>&1' EXIT
# The binary the suites after cargo test run: where cargo builds it (CARGO_TARGET_DIR included).
TESSERA_BIN=$(tessera_bin debug)
export TESSERA_BIN
status=0
run_suite cargo "$log" cargo test --workspace "$@" || status=$?

step "UI audit: Lighthouse and axe-core in Chromium"
run_suite audit "$log" scripts/test-audit.sh || status=$?

step "deployment manifests (Kubernetes and KEDA schemas)"
run_suite deploy "$log" scripts/test-deploy.sh || status=$?

# The container and multi-host tests run the binary cargo test built; they need root (a Docker
# engine, network namespaces).
if [ "$(id -u)" -eq 0 ]; then
  step "container image: Azurite, web, controller and two processors in containers"
  run_suite container "$log" scripts/test-container.sh || status=$?
  step "separate hosts: network namespaces on a private bridge"
  run_suite hosts "$log" scripts/test-hosts.sh || status=$?
else
  echo "the container and multi-host tests need root: run scripts/test.sh as root" >&2
  echo "root-only: 0 passed, 2 failed" | tee -a "$log"
  status=1
fi

# One closing line for the whole run: cargo prints a result line per test binary, the scripts
# one "<name>: N passed, M failed" line each; a suite that could not finish counts as failed.
summarize "$log"
exit "$status"
