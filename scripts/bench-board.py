"""A board filled as a venue fills it: PHOTOS guests' photos sent to a COLS x ROWS board that
waits for the owner's approval, every photo prepared, then approved one request at a time at
RATE a second (each approval places its photo in its cell at once). Prints the placement's
p50/p95 by tenth of the board filled, and the board's mean colour error (CIEDE2000 between each
sticker, after its capped colour shift, and its cell) against the best assignment of the same
photos to the same cells made at the end (SciPy's linear_sum_assignment on the full cost
matrix), with the shift and without it. A photo's colour is the mean of its square as Tessera
prepared it (its thumbnail); the cells' are the board's own. Used by scripts/bench-board.sh.

usage: bench-board.py BASE_URL TARGET PHOTOS_DIR PHOTOS COLS ROWS RATE CAP
"""

import http.client
import io
import json
import os
import statistics
import sys
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image
from scipy.optimize import linear_sum_assignment
from skimage.color import deltaE_ciede2000, rgb2lab

OWNER = str(uuid.uuid4())
local = threading.local()


def conn(base):
    if not hasattr(local, "conn"):
        url = urllib.parse.urlparse(base)
        local.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    return local.conn


def request(base, method, path, body=None, headers=None):
    headers = dict(headers or {})
    headers.setdefault("X-Client-Id", OWNER)
    for attempt in range(3):
        c = conn(base)
        try:
            c.request(method, path, body, headers)
            res = c.getresponse()
            return res.status, res.read()
        except (http.client.HTTPException, OSError):
            c.close()
            del local.conn
            if attempt == 2:
                raise


def multipart(fields, files):
    boundary = uuid.uuid4().hex
    out = io.BytesIO()
    for k, v in fields.items():
        out.write(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n".encode())
    for field, name, data in files:
        out.write(
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        out.write(data)
        out.write(b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return {"Content-Type": f"multipart/form-data; boundary={boundary}"}, out.getvalue()


def lab(rgb):
    return rgb2lab(np.asarray(rgb, dtype=np.float64).reshape(-1, 1, 3) / 255.0).reshape(-1, 3)


def costs(photos, cells, cap):
    """The colour error of each photo (rows) in each cell (columns) after the capped shift."""
    out = np.empty((len(photos), len(cells)))
    for lo in range(0, len(photos), 250):
        p = photos[lo:lo + 250, None, :]
        d = cells[None, :, :] - p
        if cap > 0:
            length = np.linalg.norm(d, axis=2, keepdims=True)
            scale = np.where(length > cap, cap / np.maximum(length, 1e-9), 1.0)
            moved = p + d * scale
        else:
            moved = np.broadcast_to(p, d.shape)
        out[lo:lo + 250] = deltaE_ciede2000(moved, np.broadcast_to(cells[None, :, :], d.shape))
    return out


def main():
    base, target, folder, total, cols, rows, rate, cap = sys.argv[1:9]
    total, cols, rows, rate, cap = int(total), int(cols), int(rows), float(rate), float(cap)
    files = sorted(os.listdir(folder))
    files = [os.path.join(folder, f) for f in files[:: max(1, len(files) // total)]][:total]
    with open(target, "rb") as f:
        head, body = multipart(
            {"name": "Board bench", "board_cols": cols, "board_rows": rows, "sticker_mm": 25,
             "shift_cap": cap, "per_guest": 0, "approval": "true", "screen": "false"},
            [("image", os.path.basename(target), f.read())],
        )
    status, answer = request(base, "POST", "/api/v1/events", body, head)
    assert status == 201, answer
    event = json.loads(answer)
    eid, token = event["id"], event["contribute_token"]

    # The guests' photos, 40 guests at once, one photo a request (not timed: the campaign bench
    # measures taking photos).
    ids = {}

    def send(path):
        with open(path, "rb") as f:
            head, body = multipart({}, [("files", os.path.basename(path), f.read())])
        head["X-Client-Id"] = str(uuid.uuid4())
        status, answer = request(base, "POST", f"/api/v1/events/{eid}/photos?token={token}", body, head)
        assert status == 201, answer
        ids[json.loads(answer)["photos"][0]["id"]] = path

    t0 = time.monotonic()
    with ThreadPoolExecutor(40) as pool:
        list(pool.map(send, files))
    print(f"sent {len(ids)} photos in {time.monotonic() - t0:.1f} s", flush=True)
    while True:
        status, answer = request(base, "GET", f"/api/v1/events/{eid}")
        view = json.loads(answer)
        if view["counts"]["received"] == 0:
            break
        time.sleep(2)
    print(f"every photo prepared {time.monotonic() - t0:.1f} s after the first was sent", flush=True)
    cells_hex = view["board"]["cells"]
    cells = lab([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in cells_hex])

    # Approved one request at a time, RATE a second, in an order nobody chose.
    order = list(ids)
    np.random.default_rng(7).shuffle(order)
    placed, times, lock = {}, [None] * len(order), threading.Lock()

    failed = {}

    def approve(k):
        photo = order[k]
        started = time.monotonic()
        try:
            status, answer = request(base, "PATCH", f"/api/v1/events/{eid}/photos/{photo}",
                                     json.dumps({"state": "approved"}),
                                     {"Content-Type": "application/json"})
        except Exception as e:  # a connection lost counts as its own failure
            status, answer = type(e).__name__, b""
        took = time.monotonic() - started
        with lock:
            times[k] = took
            if status != 200:
                failed[str(status)] = failed.get(str(status), 0) + 1
                if len(failed) == 1 and sum(failed.values()) == 1:
                    print(f"a failed approval: {status} {answer[:300]!r}", flush=True)
                return
            cell = json.loads(answer).get("cell")
            if cell:
                placed[photo] = (cell["row"], cell["col"])

    t0 = time.monotonic()
    with ThreadPoolExecutor(64) as pool:
        for k in range(len(order)):
            due = t0 + k / rate
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            pool.submit(approve, k)
    wall = time.monotonic() - t0
    print(f"approved {len(order)} at {len(order) / wall:.1f} a second; {len(placed)} placed, "
          f"{len(set(placed.values()))} distinct cells; failed by status: {failed or 'none'}")
    slowest = sorted(range(len(times)), key=lambda k: times[k])[-5:]
    print("slowest approvals (index, s): " + ", ".join(f"{k} {times[k]:.2f}" for k in slowest))
    print("tenth of the board | approvals | placement p50 s | p95 s")
    for k in range(10):
        part = sorted(times[len(times) * k // 10:len(times) * (k + 1) // 10])
        p95 = part[min(len(part) - 1, int(len(part) * 0.95))]
        print(f"{k + 1} | {len(part)} | {statistics.median(part):.3f} | {p95:.3f}", flush=True)

    # Each photo's colour as Tessera prepared it: its square's mean.
    def colour(photo):
        status, answer = request(base, "GET", f"/api/v1/events/{eid}/photos/{photo}/thumbnail")
        assert status == 200, status
        return np.asarray(Image.open(io.BytesIO(answer)).convert("RGB")).reshape(-1, 3).mean(axis=0)

    with ThreadPoolExecutor(16) as pool:
        photos = lab(np.floor(list(pool.map(colour, order))))
    at = {p: (r - 1) * cols + (c - 1) for p, (r, c) in placed.items()}
    rows_placed = [k for k, p in enumerate(order) if p in at]
    cols_placed = [at[order[k]] for k in rows_placed]
    if os.environ.get("OPTIMUM") == "0":
        return
    for shift, label in ((cap, f"shift capped at {cap:g}"), (0.0, "no shift")):
        t1 = time.monotonic()
        matrix = costs(photos, cells, shift)
        r, c = linear_sum_assignment(matrix)
        best = matrix[r, c].mean()
        mine = matrix[rows_placed, cols_placed].mean()
        print(f"{label}: placed as they came {mine:.3f}, the best assignment at the end {best:.3f} "
              f"(+{100 * (mine / best - 1):.1f} %; solved in {time.monotonic() - t1:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
