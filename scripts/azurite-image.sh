#!/usr/bin/env bash
# Builds `tessera-azurite:local`, Azurite as a container image, without an image registry: the
# pinned npm package (scripts/azurite.sh install) and this machine's Node.js on the project's base
# image (scripts/docker-base.sh), from deploy/azurite/Dockerfile. deploy/compose.yaml runs it.
# Usage: scripts/azurite-image.sh     (root, a running Docker engine)
#   AZURITE_IMAGE   the image name (default tessera-azurite:local)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${AZURITE_IMAGE:-tessera-azurite:local}"
BASE=tessera-base:bookworm-heif
scripts/azurite.sh install
scripts/docker-base.sh
node=$(command -v node) || { echo "azurite-image.sh: needs Node.js" >&2; exit 2; }
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$(readlink -f "$node")" "$context/node"
cp -a tools/azurite/node_modules "$context/node_modules"
cp deploy/azurite/Dockerfile "$context/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE="$BASE" -t "$IMAGE" "$context" >/dev/null
echo "azurite-image.sh: built $IMAGE" >&2
