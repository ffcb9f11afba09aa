"""Makes a large tile library from a few photos: square crops at several scales and offsets.

usage: python3 scripts/make-crops.py PHOTOS_DIR OUT_DIR PER_PHOTO [SIZE]
       python3 scripts/make-crops.py --total N [--jobs J] PHOTOS_DIR OUT_DIR [SIZE]

Each photo gives PER_PHOTO crops of SIZE px (default 64): crops of random size (a fifth of the
photo's short side to all of it) at random places, the same on every run. The crops are
written as PNG, named after the photo and numbered. Needs Pillow.

With --total, exactly N distinct crops are written as JPEG (quality 90): each photo gives an
even share of them (plus a few spare), crops that decode to the same pixels as an earlier one
(flat areas of clip art) are skipped, and the spares are dropped last crop number first, so the same N files
come out of every run with the same Pillow. J processes cut the photos (default: one per core).
"""
import hashlib
import io
import os
import random
import sys
from multiprocessing import Pool

from PIL import Image

JPEG_QUALITY = 90
SPARE = 1.02
TRIES = 20


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


def cut_photo(task):
    """Writes up to `quota` distinct JPEG crops of one photo; returns [(crop number, file name,
    digest)] in crop order. Tries at most TRIES x quota places."""
    src, dst, name, quota, size = task
    try:
        photo = Image.open(os.path.join(src, name)).convert("RGB")
    except OSError:
        return []
    stem = os.path.splitext(name)[0]
    seen = set()
    made = []
    for side, x, y in crops(name, photo.width, photo.height, quota * TRIES):
        tile = photo.resize((size, size), Image.Resampling.BOX, box=(x, y, x + side, y + side))
        buf = io.BytesIO()
        tile.save(buf, "JPEG", quality=JPEG_QUALITY)
        data = buf.getvalue()
        # Distinct as decoded: two files can differ and decode to the same pixels.
        digest = hashlib.sha1(Image.open(io.BytesIO(data)).tobytes()).digest()
        if digest in seen:
            continue
        seen.add(digest)
        file = f"{stem}-{len(made):05}.jpg"
        with open(os.path.join(dst, file), "wb") as f:
            f.write(data)
        made.append((len(made), file, digest))
        if len(made) == quota:
            break
    return made


def make_total(src, dst, total, size, jobs):
    os.makedirs(dst, exist_ok=True)
    names = sorted(n for n in os.listdir(src) if not n.startswith("."))
    quota = -(-int(total * SPARE) // len(names))
    with Pool(jobs) as pool:
        per_photo = pool.map(cut_photo, [(src, dst, n, quota, size) for n in names], chunksize=1)
    # Across photos, first come first kept; then the lowest crop numbers of every photo.
    seen = set()
    kept, dropped = [], []
    for made in per_photo:
        for number, file, digest in made:
            (dropped if digest in seen else kept).append((number, file))
            seen.add(digest)
    kept.sort()
    dropped += kept[total:]
    kept = kept[:total]
    for _, file in dropped:
        os.remove(os.path.join(dst, file))
    if len(kept) < total:
        sys.exit(f"only {len(kept)} distinct crops from {len(names)} photos, {total} asked for")
    print(f"{len(kept)} distinct crops in {dst}")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--total"] and len(args) >= 4:
        total = int(args[1])
        args = args[2:]
        jobs = os.cpu_count()
        if args[:1] == ["--jobs"]:
            jobs, args = int(args[1]), args[2:]
        if len(args) not in (2, 3):
            sys.exit(__doc__)
        size = int(args[2]) if len(args) == 3 else 64
        make_total(args[0], args[1], total, size, jobs)
        return
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    src, dst, per_photo = args[0], args[1], int(args[2])
    size = int(args[3]) if len(args) == 4 else 64
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
