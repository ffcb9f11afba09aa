"""What the Python-driven tests (tests/hosts, tests/soak) share: HTTP calls, the job form they
submit, stopping a process group, and comparing a result with `tessera render`'s pixels."""

import os
import signal
import subprocess
import urllib.request
import uuid
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures/engine"
TARGET = FIXTURES / "astronaut-48.png"


def http(method, url, body=None, headers=None, timeout=10):
    """One request; returns the status and the body (an error status raises HTTPError)."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.read()


def job_form(cells, tile_size, slices):
    """The astronaut on the `tiles` library as a multipart body, and its content type."""
    boundary = uuid.uuid4().hex
    fields = {"library": "tiles", "cells": cells, "tile_size": tile_size, "slices": slices,
              "repeat_radius": 1, "blend": 0}
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="image"; '
        f'filename="astronaut.png"\r\nContent-Type: image/png\r\n\r\n'.encode()
        + TARGET.read_bytes() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def stop_group(proc, sig=signal.SIGTERM, timeout=45):
    """Sends `sig` to the process's group, waits, and SIGKILLs it if it lingers."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def pixels(path):
    """Size and RGB bytes of an image file."""
    with Image.open(path) as image:
        return image.size, image.convert("RGB").tobytes()


def render_pixels(binary, out, cells, tile_size):
    """`tessera render` of the job `job_form` describes, written to `out`; its pixels."""
    subprocess.run(
        [str(binary), "render", str(TARGET), "-l", str(FIXTURES / "tiles"), "-o", str(out),
         "--tile-size", str(tile_size), "--cells", str(cells),
         "--repeat-radius", "1", "--blend", "0"],
        check=True, capture_output=True, env={**os.environ, "TESSERA_LOG": "warn"},
    )
    return pixels(out)
