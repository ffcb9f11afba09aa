"""A soak run: Tessera as separate processes on Azurite, jobs submitted over minutes while its
processes are killed and its storage frozen.

  - JOBS jobs (default 30) are submitted over MINUTES minutes (default 3), in a few sizes;
  - processors are killed (SIGKILL) and restarted at random, every 10 to 30 s;
  - the controller is killed once, a third of the way in, and restarted 3 s later;
  - Azurite is frozen (SIGSTOP) for 10 s once, halfway.

Every job must end done, pixel for pixel equal to `tessera render` of the same parameters, or
failed with a reason. Afterwards every queue and poison queue must be empty and no intermediate
(upload, slice plan, slice output) may remain. Prints: jobs, kills, time, storage transactions
per job, bytes left by kind.

Run by scripts/soak.sh. Traffic stays on 127.0.0.1.
"""

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from tessera_client import FIXTURES, http, job_form, pixels, render_pixels, stop_group  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TESSERA_BIN", ROOT / "target/release/tessera")).resolve()
AZURITE = ROOT / "tools/azurite/node_modules/.bin/azurite"
JOBS = int(os.environ.get("JOBS", "30"))
MINUTES = float(os.environ.get("MINUTES", "3"))
SEED = int(os.environ.get("SEED", "7"))
PORTS = {"blob": 30100, "queue": 30101, "table": 30102, "web": 30180}
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONNECTION = (
    f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={KEY};"
    f"BlobEndpoint=http://127.0.0.1:{PORTS['blob']}/devstoreaccount1;"
    f"QueueEndpoint=http://127.0.0.1:{PORTS['queue']}/devstoreaccount1"
)
WEB = f"http://127.0.0.1:{PORTS['web']}"
# Sizes of the jobs: (cells across, tile size, slices).
SIZES = [(32, 8, 2), (48, 16, 4), (64, 16, 6)]
LOGS = Path(tempfile.mkdtemp(prefix="tessera-soak-"))

rng = random.Random(SEED)
processes = {}


def env(extra=None):
    e = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "TESSERA_LOG": "info",
        "NO_COLOR": "1",
        "TESSERA_STORAGE": "azure",
        "TESSERA_AZURE_CONNECTION_STRING": CONNECTION,
        # Leases that lapse soon after a kill, and idle polling that stays brisk.
        "TESSERA_CONTROLLER__VISIBILITY_TIMEOUT_MS": "8000",
        "TESSERA_CONTROLLER__RENEWAL_INTERVAL_MS": "2000",
        "TESSERA_PROCESSOR__VISIBILITY_TIMEOUT_MS": "8000",
        "TESSERA_PROCESSOR__RENEWAL_INTERVAL_MS": "2000",
        "TESSERA_PROCESSOR__PROCESSORS": "1",
        "TESSERA_JOBS__STALL_TIMEOUT_SECS": "60",
        "TESSERA_OPS__PORT": "0",
    }
    e.update(extra or {})
    return e


def start(name, argv, extra=None):
    log = open(LOGS / f"{name}.log", "ab")
    processes[name] = subprocess.Popen(
        argv, env=env(extra), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill(name, sig=signal.SIGKILL):
    proc = processes.pop(name, None)
    if proc is not None:
        stop_group(proc, sig, timeout=30)


def wait_until(what, check, deadline=60):
    end = time.monotonic() + deadline
    while True:
        try:
            if check():
                return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > end:
            raise AssertionError(f"{what} not within {deadline} s")
        time.sleep(0.2)


def tessera(*args):
    out = subprocess.run([str(BIN), *args], env=env({"TESSERA_LOG": "warn"}),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def submit(size):
    body, content_type = job_form(*size)
    for _ in range(60):
        try:
            _, answer = http("POST", f"{WEB}/api/v1/jobs", body, {
                "Content-Type": content_type,
                "X-Client-Id": str(uuid.uuid4()),
            }, timeout=30)
            return json.loads(answer)["id"]
        except (urllib.error.URLError, OSError) as e:
            # The front end answers 503 while storage is frozen: submit again, as a client would.
            time.sleep(1)
            last = e
    raise AssertionError(f"submission refused: {last}")


def job(job_id):
    _, body = http("GET", f"{WEB}/api/v1/jobs/{job_id}")
    return json.loads(body)


renders = {}


def local_render(size):
    if size not in renders:
        cells, tile, _ = size
        renders[size] = render_pixels(BIN, LOGS / f"render-{cells}-{tile}.png", cells, tile)
    return renders[size]


def main():
    started = time.monotonic()
    kills = {"processor": 0, "controller": 0, "storage freezes": 0}
    start("azurite", [str(AZURITE), "--silent", "--inMemoryPersistence", "--disableTelemetry",
                      "--skipApiVersionCheck", "--blobHost", "127.0.0.1",
                      "--blobPort", str(PORTS["blob"]), "--queueHost", "127.0.0.1",
                      "--queuePort", str(PORTS["queue"]), "--tableHost", "127.0.0.1",
                      "--tablePort", str(PORTS["table"])])
    failures = []
    try:
        wait_until("Azurite", lambda: subprocess.run(
            [str(BIN), "queues", "depths", "--json"], env=env({"TESSERA_LOG": "error"}),
            capture_output=True).returncode == 0)
        tessera("library", "import", str(FIXTURES / "tiles"), "--name", "Tiles")
        start("web", [str(BIN), "web", "--port", str(PORTS["web"])],
              {"TESSERA_WEB__MAX_STREAMS": "100"})
        start("controller", [str(BIN), "controller"])
        for p in ("p1", "p2"):
            start(p, [str(BIN), "processor"], {"TESSERA_PROCESSOR__ID": p})
        wait_until("the front end", lambda: http("GET", f"{WEB}/readyz")[0] == 200)

        span = MINUTES * 60
        submit_at = sorted(rng.uniform(0, span) for _ in range(JOBS))
        next_kill = rng.uniform(10, 30)
        controller_kill, freeze_at = span / 3, span / 2
        jobs = []
        t0 = time.monotonic()
        while submit_at or (time.monotonic() - t0) < span:
            now = time.monotonic() - t0
            while submit_at and submit_at[0] <= now:
                submit_at.pop(0)
                size = rng.choice(SIZES)
                jobs.append((submit(size), size))
            if now >= next_kill:
                victim = rng.choice(["p1", "p2"])
                kill(victim)
                kills["processor"] += 1
                time.sleep(rng.uniform(0.5, 3))
                start(victim, [str(BIN), "processor"], {"TESSERA_PROCESSOR__ID": victim})
                next_kill = now + rng.uniform(10, 30)
            if controller_kill is not None and now >= controller_kill:
                kill("controller")
                kills["controller"] += 1
                time.sleep(3)
                start("controller", [str(BIN), "controller"])
                controller_kill = None
            if freeze_at is not None and now >= freeze_at:
                os.kill(processes["azurite"].pid, signal.SIGSTOP)
                time.sleep(10)
                os.kill(processes["azurite"].pid, signal.SIGCONT)
                kills["storage freezes"] += 1
                freeze_at = None
            time.sleep(0.2)

        # Every job ends.
        ended = {}
        deadline = time.monotonic() + 600
        while len(ended) < len(jobs):
            for job_id, size in jobs:
                if job_id in ended:
                    continue
                try:
                    view = job(job_id)
                except (urllib.error.URLError, OSError):
                    continue
                if view["state"] in ("done", "failed"):
                    ended[job_id] = (view, size)
            assert time.monotonic() < deadline, f"{len(jobs) - len(ended)} jobs never ended"
            time.sleep(0.5)
        elapsed = time.monotonic() - started

        done = failed = 0
        transactions = []
        for job_id, (view, size) in ended.items():
            if view["state"] == "failed":
                failed += 1
                if not view.get("error"):
                    failures.append(f"job {job_id} failed without a reason")
                continue
            done += 1
            path = LOGS / f"{job_id}.png"
            path.write_bytes(http("GET", f"{WEB}/api/v1/jobs/{job_id}/result", timeout=60)[1])
            if pixels(path) != local_render(size):
                failures.append(f"job {job_id} {size}: pixels differ from tessera render")
            transactions.append(sum(view["transactions"].values()))

        # Nothing left behind: queues drained, intermediates gone (deletions may trail a moment).
        depths, usage = {}, {}
        end = time.monotonic() + 120
        while time.monotonic() < end:
            depths = json.loads(tessera("queues", "depths", "--json"))
            usage = json.loads(tessera("storage", "usage", "--json"))
            left = sum(usage[k]["blobs"] for k in ("imageinput", "sliceinput", "sliceoutput"))
            if all(not d for d in depths.values()) and left == 0:
                break
            time.sleep(2)
        for name, depth in depths.items():
            if depth:
                failures.append(f"{depth} messages left on {name}")
        for kind in ("imageinput", "sliceinput", "sliceoutput"):
            if usage[kind]["blobs"]:
                failures.append(f"{usage[kind]['blobs']} {kind} blobs left")

        print(f"soak: {len(jobs)} jobs over {MINUTES:g} min: {done} done (identical to tessera "
              f"render), {failed} failed with a reason")
        print(f"soak: kills: {kills['processor']} processor, {kills['controller']} controller; "
              f"{kills['storage freezes']} storage freeze of 10 s")
        print(f"soak: time {elapsed:.0f} s; storage transactions per done job: median "
              f"{statistics.median(transactions):.0f}, max {max(transactions)}"
              if transactions else "soak: no job done")
        total = sum(u["bytes"] for u in usage.values())
        kept = ", ".join(f"{k} {u['bytes']}" for k, u in usage.items() if u["bytes"])
        print(f"soak: bytes left {total} ({kept})")
    except Exception as e:  # noqa: BLE001 - reported with the logs
        failures.append(repr(e))
        for name in processes:
            tail = (LOGS / f"{name}.log").read_text(errors="replace").splitlines()[-20:]
            print(f"--- {name}\n" + "\n".join(tail))
    finally:
        for name in list(processes):
            if name == "azurite":
                os.kill(processes[name].pid, signal.SIGCONT)
            kill(name)
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"soak: {'passed' if not failures else 'failed'} (logs in {LOGS})")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
