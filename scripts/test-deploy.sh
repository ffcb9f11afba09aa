#!/usr/bin/env bash
# Validates the deployment files: the Kubernetes manifests in deploy/kubernetes against
# Kubernetes' own schemas and KEDA's CRD schemas, plus the checks that tie them to Tessera
# (tests/deploy/validate.py). Sets up itself: the Python venv (kubernetes-validate, via
# scripts/azurite.sh python) and KEDA's schema package from npm (tests/deploy).
# Usage: scripts/test-deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."

command -v node >/dev/null || { echo "test-deploy.sh: needs Node.js (npm)" >&2; exit 2; }
scripts/azurite.sh python >&2
stamp=tests/deploy/node_modules/.tessera-lock.sha256
want=$(sha256sum tests/deploy/package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  (cd tests/deploy && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$want" >"$stamp"
fi
exec .tools/venv/bin/python tests/deploy/validate.py
