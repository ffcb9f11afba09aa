"""Makes a large tile library from a few photos: square crops at several scales and offsets.

usage: python3 scripts/make-crops.py PHOTOS_DIR OUT_DIR PER_PHOTO [SIZE]

Each photo gives PER_PHOTO crops of SIZE px (default 64): crops of random size (a fifth of the
photo's short side to all of it) at random places, the same on every run. The crops are
written as PNG, named after the photo and numbered. Needs Pillow.
"""
import os
import random
import sys

from PIL import Image


def crops(name, width, height, count):
    """count (side, x, y) squares in a width x height photo: sides from the short side down to
    a fifth of it, places spread at random (seeded by the photo's name, so runs agree)."""
    rnd = random.Random(name)
    short = min(width, height)
    out = []
    for _ in range(count):
        side = max(8, int(short * rnd.uniform(0.2, 1.0)))
        out.append((side, rnd.randint(0, width - side), rnd.randint(0, height - side)))
    return out


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    src, dst, per_photo = sys.argv[1], sys.argv[2], int(sys.argv[3])
    size = int(sys.argv[4]) if len(sys.argv) == 5 else 64
    os.makedirs(dst, exist_ok=True)
    made = 0
    for name in sorted(os.listdir(src)):
        try:
            photo = Image.open(os.path.join(src, name)).convert("RGB")
        except OSError:
            continue
        stem = os.path.splitext(name)[0]
        for i, (side, x, y) in enumerate(crops(name, photo.width, photo.height, per_photo)):
            tile = photo.crop((x, y, x + side, y + side)).resize((size, size), Image.Resampling.BOX)
            tile.save(os.path.join(dst, f"{stem}-{i:04}.png"))
            made += 1
    print(f"{made} crops in {dst}")


if __name__ == "__main__":
    main()
