#!/usr/bin/env bash
# Runs Tessera on this machine with the embedded storage backend: web front end, job controller
# and image processors in one process, with a default tile library ready.
#
# The first run installs libheif (HEIC and AVIF photos) if it is missing, builds Tessera
# (release) and fetches the Noto emoji (3,786 tiles, Apache-2.0) from
# the npm registry as the default library; later runs start at once.
# Usage: scripts/serve.sh [tessera serve options, e.g. --port 9000 --processors 4]
set -euo pipefail
cd "$(dirname "$0")/.."

EMOJI_PACKAGE=emoji-datasource-google@16.0.0
TILES=.tools/tiles/noto-emoji

command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs" >&2; exit 2; }

if [ ! -d "$TILES" ]; then
  command -v npm >/dev/null || { echo "npm not found: install Node.js (it fetches the default tiles)" >&2; exit 2; }
  echo "fetching the default tile library ($EMOJI_PACKAGE) from the npm registry..." >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$EMOJI_PACKAGE" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/img/google/64 package/LICENSE package/emoji.json
  mkdir -p "$(dirname "$TILES")"
  # A folder left by an interrupted run would take the new one inside it.
  rm -rf "$TILES.partial"
  mv "$tmp/package/img/google/64" "$TILES.partial"
  cp "$tmp/package/LICENSE" "$TILES.partial/LICENSE.txt"
  # Captions from the emoji's Unicode names ("Grinning face"), for the viewer and the reports:
  # one `file,caption` line for each image the folder holds.
  node scripts/emoji-captions.js "$tmp/package/emoji.json" "$TILES.partial" > "$TILES.partial/captions.csv"
  mv "$TILES.partial" "$TILES"
  # `exec` below replaces this shell, so the EXIT trap would never run.
  rm -rf "$tmp"
  trap - EXIT
fi

. scripts/build-deps.sh
ensure_build_deps
cargo build --release --quiet --bin tessera
# Wherever cargo builds (CARGO_TARGET_DIR, a config's build.target-dir).
. scripts/suites.sh
exec "$(tessera_bin release)" serve --default-library "$TILES" --default-library-name "Noto Emoji" "$@"
