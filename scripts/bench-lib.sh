# Shared by the benchmark scripts (sourced, not run). BENCH_DIR is the script's work folder.

# measure NAME CMD...: runs CMD under GNU time into $BENCH_DIR/NAME.{time,log}; sets WALL (s),
# CPU (user + sys, s) and RSS (peak, MB). A failing command stops the benchmark with its log.
measure() {
    local name=$1
    shift
    /usr/bin/time -v -o "$BENCH_DIR/$name.time" "$@" > "$BENCH_DIR/$name.log" 2>&1 || {
        cat "$BENCH_DIR/$name.log" >&2
        exit 1
    }
    WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s }' "$BENCH_DIR/$name.time")
    CPU=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$BENCH_DIR/$name.time")
    RSS=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$BENCH_DIR/$name.time")
}

# bench_venv PACKAGE...: a virtual environment under $BENCH_DIR (made on first use) with the
# PACKAGES (pip names) in it; sets PY to its Python.
bench_venv() {
    [ -x "$BENCH_DIR/venv/bin/python" ] || python3 -m venv "$BENCH_DIR/venv"
    PY="$BENCH_DIR/venv/bin/python"
    "$BENCH_DIR/venv/bin/pip" install --quiet "$@"
}

# crops ARGS...: scripts/make-crops.py ARGS, with Pillow in the benchmark's virtual environment.
crops() {
    bench_venv pillow
    "$PY" scripts/make-crops.py "$@"
}

# release_build: the libheif build dependencies, cargo's target directory (CARGO_TARGET_DIR,
# wherever a config puts it) and TESSERA (built here in release when unset), exported.
release_build() {
    . scripts/suites.sh
    ensure_build_deps
    CARGO_TARGET_DIR=$(cargo_target_dir)
    export CARGO_TARGET_DIR
    if [ -z "${TESSERA:-}" ]; then
        cargo build --release --bin tessera
        TESSERA="$CARGO_TARGET_DIR/release/tessera"
    fi
    export TESSERA
}

# release_tessera: release_build, and METRICS (the engine's metrics example).
release_tessera() {
    release_build
    cargo build --release -p tessera-engine --example metrics
    METRICS="$CARGO_TARGET_DIR/release/examples/metrics"
}

# photo_crops DATA: the library of thousands of photos the engine benchmarks share, 24 crops of
# each photo in DATA/tiles/photos, made into DATA/tiles/photo-crops once.
photo_crops() {
    [ -d "$1/tiles/photo-crops" ] || crops "$1/tiles/photos" "$1/tiles/photo-crops" 24
}
