"""S3 transfer throughput: our ``S3Store.put_file``/``get_file`` vs bare boto3
``upload_file``/``download_file`` on the same file, against a moto server this bench starts on
loopback. Rounds alternate ours/baseline side by side; the median of each side is reported.

Both sides run at their defaults (ours: ``ONSEI_S3_PART_SIZE_MB``/``ONSEI_S3_CONCURRENCY``;
boto3: 8 MiB parts, 10 threads). Loopback moto is CPU-bound Python, so the absolute MB/s say
little about real S3; the ratio says whether our resumable ranged download and retry wrapping
cost anything over boto3's own transfer manager.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

_ENV = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1"}


@contextlib.contextmanager
def _moto_server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def _bench_env() -> Iterator[None]:
    """Dummy credentials for the loopback server only; the caller's environment is restored."""
    saved = {k: os.environ.get(k) for k in _ENV}
    os.environ.update(_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def transfers(quick: bool) -> list[dict]:
    import boto3

    from common.settings import Settings
    from common.storage.s3 import S3Store

    size_mb = 32 if quick else 256
    rounds = 2 if quick else 3
    with _bench_env(), _moto_server() as url, tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src.bin"
        with open(src, "wb") as f:
            f.writelines(os.urandom(1024 * 1024) for _ in range(size_mb))
        client = boto3.client("s3", endpoint_url=url)
        client.create_bucket(Bucket="bench")
        store = S3Store("bench", "ours", Settings(s3_endpoint_url=url))
        store.exists("warm-up")  # both clients exist before timing (boto3's made the bucket)
        up: dict[str, list[float]] = {"ours": [], "base": []}
        down: dict[str, list[float]] = {"ours": [], "base": []}
        for r in range(rounds):
            order = ("ours", "base") if r % 2 == 0 else ("base", "ours")  # alternate who goes first
            for side in order:
                if side == "ours":
                    up[side].append(_timed(lambda: store.put_file(src, "obj")))
                else:
                    up[side].append(_timed(lambda: client.upload_file(str(src), "bench",
                                                                      "base/obj")))
            for side in order:
                dest = Path(tmp) / f"dl-{side}.bin"
                if side == "ours":
                    down[side].append(_timed(lambda d=dest: store.get_file("obj", d)))
                else:
                    down[side].append(_timed(lambda d=dest: client.download_file(
                        "bench", "base/obj", str(d))))
                if dest.stat().st_size != src.stat().st_size:
                    raise RuntimeError(f"{side}: downloaded size differs")
                dest.unlink()

    def row(name: str, times: dict[str, list[float]]) -> dict:
        ours = size_mb / statistics.median(times["ours"])
        base = size_mb / statistics.median(times["base"])
        return {"name": f"storage: S3 {name} ({size_mb} MB, loopback moto)",
                "ours": round(ours, 1), "baseline": round(base, 1),
                "ratio": round(ours / base, 2), "goal": ">= 0.9", "unit": "MB/s"}

    return [row("upload, put_file vs boto3 upload_file", up),
            row("download, get_file vs boto3 download_file", down)]


ROWS = [transfers]
