#!/usr/bin/env bash
# Makes the container base image `tessera-base:bookworm-heif` locally, where no image registry
# can be reached: a minimal Debian 12 root filesystem from debootstrap (Debian's own packages, with CA
# certificates and libheif for HEIC and AVIF photos), trimmed, and `docker import`ed. Cached: the
# image, and the root filesystem's tarball under .tools/docker.
#
# Usage: scripts/docker-base.sh            (root; needs a running Docker engine)
#   DEBIAN_MIRROR   the Debian mirror (default: the one apt uses, else deb.debian.org)
#   BASE_IMAGE      the image name (default tessera-base:bookworm-heif)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${BASE_IMAGE:-tessera-base:bookworm-heif}"
CACHE=.tools/docker
TARBALL="$CACHE/base-bookworm-heif.tar"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "docker-base.sh: $IMAGE is there" >&2
  exit 0
fi
mkdir -p "$CACHE"
if [ ! -f "$TARBALL" ]; then
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
  fi
  mirror="${DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ]; then
    mirror=$(grep -hoE '^URIs: *http[^ ]*/debian$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}' || true)
    mirror="${mirror:-http://deb.debian.org/debian}"
  fi
  root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  echo "docker-base.sh: debootstrap bookworm from $mirror" >&2
  debootstrap --variant=minbase --include=ca-certificates,libheif1 bookworm "$root" "$mirror" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
         "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
         "$root"/usr/share/locale/* "$root"/var/log/*
  tar -C "$root" --numeric-owner -cf "$TARBALL.partial" .
  mv "$TARBALL.partial" "$TARBALL"
fi
docker import --change 'CMD ["/bin/bash"]' "$TARBALL" "$IMAGE" >/dev/null
echo "docker-base.sh: $IMAGE imported" >&2
