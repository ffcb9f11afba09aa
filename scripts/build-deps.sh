# Sourced by scripts/suites.sh, and so by every script that builds: the system libraries the
# build links against. libheif (HEIC and AVIF photos), with pkg-config to find it, from Debian's
# packages: installed when missing, as root or with sudo.

ensure_build_deps() {
  if command -v pkg-config >/dev/null && pkg-config --exists 'libheif >= 1.14'; then
    return 0
  fi
  echo "installing libheif-dev and pkg-config (HEIC and AVIF decoding) from Debian's packages..." >&2
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "libheif is missing: run as root, or: apt-get install -y libheif-dev pkg-config" >&2
      return 2
    }
    sudo=sudo
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libheif-dev pkg-config >&2 \
    || { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libheif-dev pkg-config >&2; }
}
