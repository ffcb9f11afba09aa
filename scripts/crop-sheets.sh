#!/usr/bin/env bash
# Contact sheets of the tiles a folder of photos makes, cropped at the centre and where the
# interest is (`--crop centre` and `--crop attention`), to compare the two crop rules.
#
#   scripts/crop-sheets.sh PHOTOS [SHAPE]
#
# Writes OUT/centre.png and OUT/attention.png (OUT defaults to target/crop-sheets) and prints
# the import time of each. TESSERA names the binary (default: a release build of this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
photos=${1:?usage: scripts/crop-sheets.sh PHOTOS [SHAPE]}
shape=${2:-1:1}
out=${OUT:-target/crop-sheets}
if [ -z "${TESSERA:-}" ]; then
  cargo build --release --quiet --bin tessera
  TESSERA=target/release/tessera
fi
mkdir -p "$out"
for rule in centre attention; do
  "$TESSERA" library index "$photos" -o "$out/$rule.idx" --shape "$shape" --crop "$rule" \
    --sheet "$out/$rule.png" -q
done
echo "sheets: $out/centre.png $out/attention.png"
