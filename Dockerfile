# One image for every Tessera role: the role is the command (serve, web, controller, processor,
# library import, queues, ...). Configuration comes from TESSERA_* environment variables.
#
#   docker build -t tessera .
#       compiles Tessera in a Rust image, then copies only the binary into the runtime stage;
#   docker build -t tessera --target prebuilt --build-arg BASE=tessera-base:bookworm-heif -f Dockerfile DIR
#       takes a `tessera` binary built beforehand on Debian 12 from the context DIR (no compiler;
#       scripts/docker-base.sh makes the base locally where no registry can be reached).
#
# The image has no shell tool to probe itself (no curl): health checks belong to the
# orchestrator, on /healthz and /readyz (web port 8080, ops port 9090 for controller and
# processor).

ARG BASE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1-bookworm

# What every runtime stage shares: CA certificates (HTTPS to Azure), libheif (HEIC and AVIF
# photos), a non-root user, the data directory of the embedded backend.
FROM ${BASE} AS runtime-base
RUN set -eu; \
    if [ ! -e /etc/ssl/certs/ca-certificates.crt ] || [ ! -e /usr/lib/x86_64-linux-gnu/libheif.so.1 ]; then \
        apt-get update; \
        apt-get install -y --no-install-recommends ca-certificates libheif1; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    mkdir -p /data; \
    chown 10001:10001 /data
ENV TESSERA_DATA=/data \
    TESSERA_WEB__BIND=0.0.0.0 \
    TESSERA_OPS__BIND=0.0.0.0 \
    TESSERA_LOG=info
VOLUME /data
WORKDIR /data
USER 10001:10001
EXPOSE 8080 9090
# Listeners stop receiving, running handlers finish (up to 30 s), held messages are released.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tessera"]
CMD ["serve"]

# A binary built beforehand, from a context that holds only `tessera`.
FROM runtime-base AS prebuilt
COPY tessera /usr/local/bin/tessera

# Compiles Tessera.
FROM ${RUST_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends libheif-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin tessera \
    && objcopy --strip-debug target/release/tessera /tessera

# The default: the compiled binary over the runtime base.
FROM runtime-base AS runtime
COPY --from=build /tessera /usr/local/bin/tessera
