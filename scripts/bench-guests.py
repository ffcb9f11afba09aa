"""Many guests sending photos to one event at once, one photo a request, as a campaign's
guests would: GUESTS threads, each its own client id, sending its share of the photos in
PHOTOS_DIR one after another. Prints photos per second, the requests' p50/p95 by tenth of the
run and refusals by status. Used by scripts/bench-guests.sh, which starts the roles.

usage: bench-guests.py BASE_URL EVENT_ID TOKEN PHOTOS_DIR GUESTS
"""

import http.client
import json
import os
import statistics
import sys
import threading
import time
import urllib.parse
import uuid


def multipart(name, data):
    boundary = uuid.uuid4().hex
    head = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
        "Content-Type: image/jpeg\r\n\r\n"
    ).encode()
    return boundary, head + data + f"\r\n--{boundary}--\r\n".encode()


def guest(base, event, token, photos, started, results, lock):
    url = urllib.parse.urlparse(base)
    client = str(uuid.uuid4())
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    for path in photos:
        with open(path, "rb") as f:
            boundary, body = multipart(os.path.basename(path), f.read())
        t0 = time.monotonic()
        try:
            conn.request(
                "POST",
                f"/api/v1/events/{event}/photos?token={token}",
                body,
                {
                    "Content-Type": f"multipart/form-data; boundary={boundary}",
                    "X-Client-Id": client,
                },
            )
            res = conn.getresponse()
            res.read()
            status = res.status
        except Exception as e:  # a connection lost counts as its own refusal
            status = type(e).__name__
            conn.close()
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        t1 = time.monotonic()
        with lock:
            results.append((t0 - started, t1 - t0, status))


def main():
    base, event, token, folder, guests = sys.argv[1:6]
    guests = int(guests)
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    shares = [files[i::guests] for i in range(guests)]
    results, lock = [], threading.Lock()
    started = time.monotonic()
    threads = [
        threading.Thread(target=guest, args=(base, event, token, s, started, results, lock))
        for s in shares
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    taken = [r for r in results if r[2] == 201]
    refused = {}
    for r in results:
        if r[2] != 201:
            refused[str(r[2])] = refused.get(str(r[2]), 0) + 1
    print(f"guests {guests}, requests {len(results)}, taken {len(taken)}, wall {wall:.1f} s")
    print(f"photos per second (taken / wall): {len(taken) / wall:.1f}")
    print(f"refused by status: {json.dumps(refused) if refused else 'none'}")
    print("tenth | requests | p50 s | p95 s")
    for k in range(10):
        lo, hi = wall * k / 10, wall * (k + 1) / 10
        times = sorted(r[1] for r in results if lo <= r[0] < hi)
        if not times:
            continue
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"{k + 1} | {len(times)} | {statistics.median(times):.3f} | {p95:.3f}")


if __name__ == "__main__":
    main()
