#!/usr/bin/env bash
# Likeness on photos nobody tuned on: two validation sets of targets from packages the shared
# data set does not use, each chosen before any tuning on it, against metapixel `--distance=1`
# on the same tiles. Each set has two halves: "tune" (its first, third, ... target) for tuning,
# "held out" (the others), measured once at the end of any tuning. Each target is scaled to
# 384 px across (its height a multiple of 4) so that both tools make the same grid: 96 cells of
# 16 px across, repeat radius 1 (metapixel: --scale=4).
#
# usage: scripts/bench-validation.sh [DATA]    (default data/; the tile libraries come from it)
# env:   OUT=DIR       work folder (default target/bench-validation; downloads kept in it)
#        TESSERA=PATH  the tessera binary (default: built here in release)
#        SETS="1 2"    which sets to measure; HALVES="tune held-out": which halves
# Sources (registries only):
#   set 1: PyPI matplotlib's sample data (a portrait, a logo with text, a product shot); Debian's
#          plasma-workspace-wallpapers and mate-backgrounds (landscapes, a forest, a waterfall,
#          the night sky, a sunset, insects and flowers, a storm, objects);
#   set 2: PyPI insightface's sample images (faces in a crowd); Debian's opencv-doc examples
#          (a footballer before a crowd, architecture, street signs, a logo and a drawing, animal
#          portraits, a painted night sky, an aerial view, fruit, a butterfly, wildlife).
# Prints Markdown tables (also $OUT/table.md).
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:-data}
OUT=${OUT:-target/bench-validation}
mkdir -p "$OUT/src" "$OUT/targets" "$OUT/out"
OUT=$(cd "$OUT" && pwd)
BENCH_DIR=$OUT
. scripts/bench-lib.sh
[ -d "$DATA/tiles/photos" ] || scripts/fetch-data.sh "$DATA"
photo_crops "$DATA"
if ! command -v metapixel >/dev/null; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get install -y metapixel || { $SUDO apt-get update && $SUDO apt-get install -y metapixel; }
fi
release_tessera
[ -x "$OUT/venv/bin/python" ] || { python3 -m venv "$OUT/venv" && "$OUT/venv/bin/pip" install -q pillow; }
PY="$OUT/venv/bin/python"

# The sources, downloaded once.
if [ ! -f "$OUT/src/.done-sets-1-2" ]; then
    (cd "$OUT/src" && pip download -q --no-deps matplotlib -d wheel)
    unzip -q -o -j "$OUT/src"/wheel/matplotlib-*.whl 'matplotlib/mpl-data/sample_data/*.jpg' \
        'matplotlib/mpl-data/sample_data/*.png' -d "$OUT/src/mpl"
    (cd "$OUT/src" && pip download -q --no-deps --no-binary :all: insightface==2.1 -d sdist)
    tar -xzf "$OUT/src"/sdist/insightface-*.tar.gz -C "$OUT/src" --strip-components=1 \
        --wildcards '*/insightface/data/images/t1.jpg'
    for p in plasma-workspace-wallpapers mate-backgrounds opencv-doc; do
        (cd "$OUT/src" && apt-get download -q "$p" 2>&1 | grep -v unsandboxed || true)
        dpkg-deb -x "$OUT/src/${p}"_*.deb "$OUT/src/root"
    done
    touch "$OUT/src/.done-sets-1-2"
fi
W="$OUT/src/root/usr/share/wallpapers"
M="$OUT/src/root/usr/share/backgrounds/mate"
CV="$OUT/src/root/usr/share/doc/opencv-doc/examples"
# name and file, in the order the halves alternate.
SET_1=(
    "portrait:$OUT/src/mpl/grace_hopper.jpg"
    "logo-and-text:$OUT/src/mpl/logo2.png"
    "mountains:$W/Altai/contents/images/5120x2880.png"
    "night-sky:$W/MilkyWay/contents/images/5120x2880.png"
    "forest:$W/Canopee/contents/images/5120x2880.png"
    "waterfall:$W/Cascade/contents/images/5120x2880.png"
    "sunset:$W/EveningGlow/contents/images/5120x2880.jpg"
    "lake:$W/BytheWater/contents/images/5120x2880.jpg"
    "cups:$W/ColorfulCups/contents/images/5120x2880.jpg"
    "ladybird:$M/nature/LadyBird.jpg"
    "storm:$M/nature/Storm.jpg"
    "flower:$M/nature/YellowFlower.jpg"
    "product:$OUT/src/mpl/Minduka_Present_Blue_Pack.png"
)
SET_2=(
    "crowd:$OUT/src/insightface/data/images/t1.jpg"
    "footballer:$CV/data/messi5.jpg"
    "building:$CV/data/building.jpg"
    "old-street:$CV/data/leuvenA.jpg"
    "road-sign:$CV/text/scenetext02.jpg"
    "notice:$CV/text/scenetext01.jpg"
    "opencv-logo:$CV/data/opencv-logo.png"
    "robot-drawing:$CV/data/ml.png"
    "baboon:$CV/data/baboon.jpg"
    "dog:$CV/data/chicky_512.png"
    "starry-night:$CV/data/starry_night.jpg"
    "aerial:$CV/data/aero1.jpg"
    "fruit:$CV/data/fruits.jpg"
    "butterfly:$CV/data/butterfly.jpg"
    "squirrel:$CV/data/squirrel_cls.jpg"
    "robin:$CV/hfs/data/000.jpg"
)
for entry in "${SET_1[@]}" "${SET_2[@]}"; do
    name=${entry%%:*}
    file=${entry#*:}
    if [ ! -f "$file" ]; then
        # Wallpapers come at a few sizes and in either format: take the largest there is.
        file=$(ls -S "$(dirname "$file")"/* 2>/dev/null | head -1)
    fi
    [ -n "$file" ] && [ -f "$file" ] || { echo "missing target $name" >&2; exit 1; }
    "$PY" - "$file" "$OUT/targets/$name.png" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
h = max(4, round(384 * im.height / im.width / 4) * 4)
im.resize((384, h), Image.LANCZOS).save(sys.argv[2])
PY
done

"$TESSERA" library index "$DATA/tiles/photos" -o "$OUT/photos.idx" -q
"$TESSERA" library index "$DATA/tiles/photo-crops" -o "$OUT/crops.idx" -q
for lib in photos photo-crops; do
    if [ ! -d "$OUT/mp-$lib" ]; then
        rm -rf "$OUT/flat-$lib"
        mkdir -p "$OUT/flat-$lib" "$OUT/mp-$lib"
        find "$DATA/tiles/$lib" -maxdepth 1 -type f -exec ln -sf {} "$OUT/flat-$lib/" \;
        metapixel-prepare --width=64 --height=64 "$OUT/flat-$lib" "$OUT/mp-$lib" > /dev/null
    fi
done

TABLE="$OUT/table.md"
: > "$TABLE"
value() { sed -E "s/.*$1=([0-9.]+).*/\1/" <<< "$2"; }
for set in ${SETS:-1 2}; do
    declare -n targets="SET_$set"
    for half in ${HALVES:-tune held-out}; do
        for lib in photos photo-crops; do
            idx=$OUT/$([ "$lib" = photos ] && echo photos || echo crops).idx
            {
                echo
                echo "Set $set, $half half, the $lib library ($(ls "$DATA/tiles/$lib" | wc -l) tiles), 96 cells of 16 px across, radius 1:"
                echo
                echo "| target | cells | Tessera CIEDE2000 | metapixel CIEDE2000 | Tessera ssim_view | metapixel ssim_view |"
                echo "|---|---|---|---|---|---|"
            } | tee -a "$TABLE"
            i=0
            sum_t=0 sum_m=0 n=0 lower=0
            for entry in "${targets[@]}"; do
                name=${entry%%:*}
                i=$((i + 1))
                if [ "$half" = tune ] && [ $((i % 2)) = 0 ]; then continue; fi
                if [ "$half" = held-out ] && [ $((i % 2)) = 1 ]; then continue; fi
                target="$OUT/targets/$name.png"
                rows=$(( $("$PY" -c "from PIL import Image; print(Image.open('$target').height)") / 4 ))
                "$TESSERA" render "$target" -l "$idx" -o "$OUT/out/t-$lib-$name.png" -q --cells 96 \
                    --tile-size 16 --repeat-radius 1
                # metapixel's mosaic depends only on the target and the tiles: made once.
                mp="$OUT/out/m-$lib-$name.png"
                [ -f "$mp" ] && [ "$mp" -nt "$target" ] \
                    || metapixel -l "$OUT/mp-$lib" --width=16 --height=16 --scale=4 --distance=1 \
                        --metapixel "$target" "$mp" > /dev/null
                t=$("$METRICS" "$target" "$OUT/out/t-$lib-$name.png" 96 "$rows")
                m=$("$METRICS" "$target" "$mp" 96 "$rows")
                td=$(value de00_mean "$t"); md=$(value de00_mean "$m")
                ts=$(value ssim_view "$t"); ms=$(value ssim_view "$m")
                printf '| %s | 96 x %s | %.2f | %.2f | %.3f | %.3f |\n' "$name" "$rows" "$td" "$md" "$ts" "$ms" | tee -a "$TABLE"
                sum_t=$(awk "BEGIN {print $sum_t + $ts}"); sum_m=$(awk "BEGIN {print $sum_m + $ms}")
                n=$((n + 1))
                lower=$((lower + $(awk "BEGIN {print ($td < $md) ? 1 : 0}")))
            done
            printf '| mean ssim_view, lower colour error | | %d of %d | | %.3f | %.3f |\n' "$lower" "$n" \
                "$(awk "BEGIN {print $sum_t / $n}")" "$(awk "BEGIN {print $sum_m / $n}")" | tee -a "$TABLE"
        done
    done
done
