#!/usr/bin/env bash
# The container test: builds Tessera's image from a binary already built, then runs Azurite (on
# the host), `web`, `controller` and two `processor` containers, all with --network host and
# talking only to 127.0.0.1; submits a job over REST and checks the mosaic equals `tessera render`
# pixel for pixel, that the containers run as non-root, answer their probes and metrics, and stop
# cleanly on SIGTERM. Also validates deploy/compose.yaml.
#
# Sets up what it needs on a fresh Debian machine (root): Docker (Debian's docker.io, dockerd
# started here and stopped again), the local base image (scripts/docker-base.sh), Azurite and the
# Python venv (scripts/azurite.sh).
# Usage: scripts/test-container.sh
#   TESSERA_BIN   the binary put in the image (default the debug build in cargo's target directory, which cargo test builds)
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/suites.sh
TESSERA_BIN="${TESSERA_BIN:-$(tessera_bin debug)}"
IMAGE=tessera:test
PREFIX=tessera-ct
WEB_PORT=18080
export AZURITE_BLOB_PORT=20000 AZURITE_QUEUE_PORT=20001 AZURITE_TABLE_PORT=20002
KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONNECTION="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$KEY;BlobEndpoint=http://127.0.0.1:$AZURITE_BLOB_PORT/devstoreaccount1;QueueEndpoint=http://127.0.0.1:$AZURITE_QUEUE_PORT/devstoreaccount1"
# The legacy builder: Debian's Docker has no BuildKit plugin.
export DOCKER_BUILDKIT=0

passed=0
failed=0
check() { # name, then the command that must succeed
  local name=$1
  shift
  if "$@"; then
    echo "ok   $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    failed=$((failed + 1))
  fi
}
log() { echo "test-container.sh: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "needs root (Docker engine)"; exit 2; }
[ -x "$TESSERA_BIN" ] || { log "no binary at $TESSERA_BIN (cargo build first)"; exit 2; }

work=$(mktemp -d)
started_dockerd=
cleanup() {
  docker ps -aq --filter "name=^$PREFIX-" | xargs -r docker rm -f >/dev/null 2>&1 || true
  docker network ls -q --filter "name=^$PREFIX-compose" | xargs -r docker network rm >/dev/null 2>&1 || true
  scripts/azurite.sh stop >/dev/null 2>&1 || true
  if [ -n "$started_dockerd" ]; then
    kill "$started_dockerd" 2>/dev/null || true
    wait "$started_dockerd" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Docker: the engine from Debian's packages, started here unless one runs.
packages=()
command -v dockerd >/dev/null || packages+=(docker.io)
# Compose validates deploy/compose.yaml: Debian's docker-compose, unless a v2 plugin is there.
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || packages+=(docker-compose)
if [ "${#packages[@]}" -gt 0 ]; then
  log "installing ${packages[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  mkdir -p .tools/docker
  dockerd >.tools/docker/dockerd.log 2>&1 &
  started_dockerd=$!
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { tail -20 .tools/docker/dockerd.log >&2; log "dockerd did not start"; exit 1; }
fi
docker ps -aq --filter "name=^$PREFIX-" | xargs -r docker rm -f >/dev/null 2>&1 || true

scripts/docker-base.sh
scripts/azurite.sh install >&2
scripts/azurite.sh python >&2
PY=.tools/venv/bin/python

# The image, from the binary already built (debug info stripped).
mkdir "$work/context"
objcopy --strip-debug "$TESSERA_BIN" "$work/context/tessera"
build_started=$(date +%s%N)
docker build -q --target prebuilt --build-arg BASE=tessera-base:bookworm-heif \
  -t "$IMAGE" -f Dockerfile "$work/context" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
log "image $IMAGE built in $(( ($(date +%s%N) - build_started) / 1000000 )) ms: $((size / 1000000)) MB"

compose_valid() {
  if command -v docker-compose >/dev/null; then
    docker-compose -f deploy/compose.yaml config -q
  else
    docker compose -f deploy/compose.yaml config -q
  fi
}
check "deploy/compose.yaml is valid" compose_valid

scripts/azurite.sh start >&2

run_role() { # name, then the role's arguments
  local name=$1
  shift
  docker run -d --name "$PREFIX-$name" --network host \
    -e TESSERA_STORAGE=azure -e TESSERA_AZURE_CONNECTION_STRING="$CONNECTION" \
    -e TESSERA_WEB__BIND=127.0.0.1 -e TESSERA_OPS__BIND=127.0.0.1 \
    -e NO_COLOR=1 "${extra_env[@]}" "$IMAGE" "$@" >/dev/null
}

# The tile library, imported by the image itself.
docker run --rm --network host -e TESSERA_STORAGE=azure -e TESSERA_AZURE_CONNECTION_STRING="$CONNECTION" \
  -e TESSERA_LOG=warn -v "$PWD/tests/fixtures/engine/tiles:/tiles:ro" "$IMAGE" \
  library import /tiles --name Tiles >/dev/null

extra_env=()
run_role web web --port "$WEB_PORT"
extra_env=(-e TESSERA_OPS__PORT=19091)
run_role controller controller
extra_env=(-e TESSERA_OPS__PORT=19092 -e TESSERA_PROCESSOR__ID=container-1 -e TESSERA_PROCESSOR__PROCESSORS=1)
run_role processor-1 processor
extra_env=(-e TESSERA_OPS__PORT=19093 -e TESSERA_PROCESSOR__ID=container-2 -e TESSERA_PROCESSOR__PROCESSORS=1)
run_role processor-2 processor

ready() { # url: waits up to 60 s for 200
  for _ in $(seq 1 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}
for target in "web:$WEB_PORT" controller:19091 processor-1:19092 processor-2:19093; do
  check "${target%%:*} container ready (/readyz)" ready "http://127.0.0.1:${target##*:}/readyz"
done

# A job over REST, compared with a local render pixel for pixel.
job=$(curl -sf -F image=@tests/fixtures/engine/astronaut-48.png -F library=tiles -F cells=48 \
  -F tile_size=16 -F slices=6 -F repeat_radius=1 -F blend=0 \
  "http://127.0.0.1:$WEB_PORT/api/v1/jobs" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])')
state=
for _ in $(seq 1 1200); do
  state=$(curl -sf "http://127.0.0.1:$WEB_PORT/api/v1/jobs/$job" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])' || true)
  [ "$state" = done ] || [ "$state" = failed ] && break
  sleep 0.1
done
check "job done in the containers (state: $state)" test "$state" = done
curl -sf -o "$work/result.png" "http://127.0.0.1:$WEB_PORT/api/v1/jobs/$job/result" || true
TESSERA_LOG=warn "$TESSERA_BIN" render tests/fixtures/engine/astronaut-48.png -l tests/fixtures/engine/tiles \
  -o "$work/local.png" --tile-size 16 --cells 48 --repeat-radius 1 --blend 0
same_pixels() {
  "$PY" - "$work/result.png" "$work/local.png" <<'PYEOF'
import sys
from PIL import Image
a, b = (Image.open(p).convert("RGB") for p in sys.argv[1:3])
sys.exit(0 if a.size == b.size and a.tobytes() == b.tobytes() else 1)
PYEOF
}
check "result equals tessera render pixel for pixel" same_pixels

non_root() { # container
  local pid uid
  pid=$(docker inspect -f '{{.State.Pid}}' "$PREFIX-$1")
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  [ "$uid" = 10001 ]
}
for c in web controller processor-1 processor-2; do
  check "$c runs as uid 10001" non_root "$c"
done
scraped() { # port, metric that must be there with a non-zero value
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 ~ "^"m && $2 > 0 {found=1} END {exit !found}'
}
# Which processor takes the slices is up to the queue (one may take all six of a small job).
either_processor() { scraped 19092 "$1" || scraped 19093 "$1"; }
check "processors' metrics count slices" either_processor tessera_slice_render_seconds_count
check "controller's metrics count handled messages" scraped 19091 tessera_messages_handled_total
check "web's metrics count finished jobs or handled responses" scraped "$WEB_PORT" tessera_messages_handled_total

# SIGTERM: each role stops by itself, well within the grace period, with exit code 0.
for c in processor-1 processor-2 controller web; do
  t0=$(date +%s%N)
  docker stop -t 40 "$PREFIX-$c" >/dev/null
  took_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  code=$(docker inspect -f '{{.State.ExitCode}}' "$PREFIX-$c")
  check "$c stops on SIGTERM in $took_ms ms with exit code $code" \
    test "$code" = 0 -a "$took_ms" -lt 35000
done

# Compose, brought up as a person would: deploy/compose.yaml with the image above and Azurite's
# image made locally, the library imported by its one-shot service, a job through its web.
compose() {
  local tool=(docker compose)
  command -v docker-compose >/dev/null && tool=(docker-compose)
  TESSERA_IMAGE="$IMAGE" TESSERA_WEB_PORT=18180 AZURITE_IMAGE=tessera-azurite:local \
    "${tool[@]}" -p "$PREFIX-compose" -f deploy/compose.yaml "$@"
}
compose_job() {
  compose up -d --no-build --scale processor=2 >&2 || return 1
  ready http://127.0.0.1:18180/readyz || return 1
  TILES="$PWD/tests/fixtures/engine/tiles" compose run --rm library >/dev/null 2>&1 || return 1
  local id state=
  id=$(curl -sf -F image=@tests/fixtures/engine/astronaut-48.png -F library=tiles -F cells=48 \
    -F tile_size=16 -F slices=6 "http://127.0.0.1:18180/api/v1/jobs" \
    | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])') || return 1
  for _ in $(seq 1 1200); do
    state=$(curl -sf "http://127.0.0.1:18180/api/v1/jobs/$id" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])' || true)
    [ "$state" = done ] || [ "$state" = failed ] && break
    sleep 0.1
  done
  [ "$state" = done ] || return 1
  curl -sf -o "$work/compose.png" "http://127.0.0.1:18180/api/v1/jobs/$id/result" || return 1
  [ "$(head -c 4 "$work/compose.png" | tail -c 3)" = PNG ]
}
scripts/azurite-image.sh
check "docker-compose up runs a job (Azurite's image made locally)" compose_job
[ "$failed" -gt 0 ] && compose logs --tail 30 >&2
compose down -v -t 40 >/dev/null 2>&1 || true

if [ "$failed" -gt 0 ]; then
  for c in web controller processor-1 processor-2; do
    echo "--- $c"
    docker logs --tail 30 "$PREFIX-$c" 2>&1 || true
  done
fi
echo "image size: $((size / 1000000)) MB"
echo "container: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
