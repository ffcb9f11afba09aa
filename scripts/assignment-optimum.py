"""The exact optimum of a capped assignment, and a plan's distance from it.

usage: python3 scripts/assignment-optimum.py TARGET TILES_DIR COLS ROWS MAX_USES MIN_USES [PLAN_CSV...]

The problem: every cell of a COLS x ROWS grid of TARGET takes one tile of TILES_DIR, each tile at
most MAX_USES times and at least MIN_USES times, at least cost, the cost of a tile in a cell being
CIEDE2000 between the cell's mean and the tile's mean (both area averages in sRGB, as the quality
metric sees a mosaic from a distance). No repeat radius: the optimum is a bound no plan with one
can beat. Pixel-identical tiles count once, as the library merges them.

SciPy's linear_sum_assignment solves it exactly on the full matrix: MAX_USES copies of every
tile; with a floor, stand-in rows (one per copy no cell needs) that may take only the copies past
the first MIN_USES of each tile, so that those are all taken by cells.

Prints `optimum=MEAN` (the mean cost per cell) and, for each PLAN_CSV (`tessera render --plan-csv`,
columns row,col,tile,name,...), `plan=MEAN uses_max=N unused=N` under the same costs: tiles are
matched to the plan by file name.
Needs numpy, scipy, scikit-image and Pillow.
"""
import csv
import hashlib
import os
import sys
import time

import numpy as np
from PIL import Image
from scipy.optimize import linear_sum_assignment
from skimage.color import deltaE_ciede2000, rgb2lab


def cell_means(path, cols, rows):
    """Each cell's mean sRGB colour: the exact area average over the cell's share of the image,
    pixels cut by a cell's edge weighed by the part inside it, as Tessera's grid takes it.
    (Pillow's box filter is not this where cells are not a whole number of pixels.)"""
    img = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64) / 255.0
    height, width = img.shape[:2]
    across, down = area_weights(width, cols), area_weights(height, rows)
    rows_of = np.tensordot(down, img, axes=(1, 0))  # rows x width x 3
    means = np.tensordot(across, rows_of, axes=(1, 1))  # cols x rows x 3
    return means.transpose(1, 0, 2).reshape(-1, 3)


def area_weights(pixels, cells):
    """A cells x pixels matrix: how much of each pixel falls in each cell, rows summing to 1."""
    edges = np.arange(cells + 1) * (pixels / cells)
    left, right = edges[:-1, None], edges[1:, None]
    at = np.arange(pixels)[None, :]
    overlap = np.clip(np.minimum(at + 1, right) - np.maximum(at, left), 0, None)
    return overlap / overlap.sum(axis=1, keepdims=True)


def tile_means(folder):
    """The distinct tiles' names and mean sRGB colours; the names of pixel-identical files
    map to the first, in name order."""
    names, means, alias, seen = [], [], {}, {}
    for name in sorted(os.listdir(folder)):
        try:
            img = Image.open(os.path.join(folder, name)).convert("RGB")
        except OSError:
            continue
        digest = hashlib.sha256(img.tobytes() + repr(img.size).encode()).hexdigest()
        if digest in seen:
            alias[name] = seen[digest]
            continue
        seen[digest] = name
        alias[name] = name
        names.append(name)
        means.append(np.asarray(img, dtype=np.float64).reshape(-1, 3).mean(axis=0) / 255.0)
    return names, np.array(means), alias


def costs(cells, tiles):
    """CIEDE2000 between every cell and every tile, a block of cells at a time."""
    cl, tl = rgb2lab(cells[None, :, :])[0], rgb2lab(tiles[None, :, :])[0]
    out = np.empty((len(cl), len(tl)), dtype=np.float64)
    for a in range(0, len(cl), 256):
        b = min(a + 256, len(cl))
        out[a:b] = deltaE_ciede2000(cl[a:b, None, :], tl[None, :, :])
    return out


def optimum(cost, max_uses, min_uses):
    """The least mean cost, and each cell's tile."""
    cells, n = cost.shape
    wide = np.tile(cost, (1, max_uses))  # copy j of tile t is column j * n + t
    spare = n * max_uses - cells
    if min_uses > 0 and spare > 0:
        big = 1e6
        stand_in = np.zeros((spare, n * max_uses))
        stand_in[:, : n * min_uses] = big
        wide = np.vstack([wide, stand_in])
    rows, cols = linear_sum_assignment(wide)
    real = rows < cells
    tile_of = np.empty(cells, dtype=np.int64)
    tile_of[rows[real]] = cols[real] % n
    return cost[np.arange(cells), tile_of].mean(), tile_of


def main():
    target, folder = sys.argv[1], sys.argv[2]
    cols, rows, max_uses, min_uses = map(int, sys.argv[3:7])
    plans = sys.argv[7:]
    names, means, alias = tile_means(folder)
    cells = cell_means(target, cols, rows)
    start = time.time()
    cost = costs(cells, means)
    mean, tile_of = optimum(cost, max_uses, min_uses)
    uses = np.bincount(tile_of, minlength=len(names))
    print(
        f"optimum={mean:.3f} tiles={len(names)} cells={cols * rows} uses_max={uses.max()} "
        f"unused={(uses == 0).sum()} seconds={time.time() - start:.1f}"
    )
    index = {name: i for i, name in enumerate(names)}
    for path in plans:
        plan = np.empty(cols * rows, dtype=np.int64)
        with open(path, newline="") as f:
            for rec in csv.DictReader(f):
                plan[int(rec["row"]) * cols + int(rec["col"])] = index[alias[rec["name"]]]
        used = np.bincount(plan, minlength=len(names))
        got = cost[np.arange(cols * rows), plan].mean()
        print(
            f"plan={got:.3f} above={100 * (got / mean - 1):.1f}% uses_max={used.max()} "
            f"unused={(used == 0).sum()} file={path}"
        )


if __name__ == "__main__":
    main()
