"""Orchestration bench: model busy fraction with prefetch vs the naive loop; enqueue speed.

Busy fraction: a model double (a real Stage whose ``process`` sleeps a fixed time per item)
on inputs in a store that injects S3-like latency and bandwidth. "ours" is the worker's path
(the next shard's inputs prefetched by a background thread when its message is received,
exactly what ``task_received`` does in a worker); "baseline" is fetch -> compute -> upload in
sequence. Busy = time inside model calls / wall, after the first download (no scheme can hide
the very first one).

Enqueue: 50,000 shards through ``publish_shards`` (one connection, pipelined batches) vs a
plain ``send_task`` loop (what ``apply_async`` does), the loop measured on 5,000 and scaled.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common.settings import Settings
from common.stages.contract import Stage, StageResult
from common.stages.engine import Engine
from common.stages.prefetch import Prefetcher
from common.storage.local import LocalStore
from services.stages import PIPELINE, PipelineSettings, output_key

LATENCY = 0.03  # seconds per request (S3 first byte, typical)
BANDWIDTH = 5e6  # bytes/s per stream (small files: the copy costs no CPU here)
INPUT_BYTES = 5_000_000  # 1 s to download
OUTPUT_BYTES = 200_000  # 0.04 s to upload
ITEMS, PER_ITEM = 40, 0.1  # 4 s of "GPU" per shard


class SlowStore(LocalStore):
    """A local store with per-request latency and a bandwidth limit (sleeps, no CPU)."""

    def _wait(self, nbytes: int = 0) -> None:
        time.sleep(LATENCY + nbytes / BANDWIDTH)

    def get_file(self, key: str, dest: Path) -> Path:
        self._wait(self.size(key))
        return super().get_file(key, dest)

    def put_file(self, src: Path, key: str) -> None:
        self._wait(Path(src).stat().st_size)
        super().put_file(src, key)

    def exists(self, key: str) -> bool:
        self._wait()
        return super().exists(key)

    def write_bytes(self, key: str, data: bytes) -> None:
        self._wait(len(data))
        super().write_bytes(key, data)

    def delete(self, key: str) -> None:
        self._wait()
        super().delete(key)


class FixedTimeModel(Stage):
    """The model double: ``PER_ITEM`` seconds per item, ``ITEMS`` items per shard."""

    name = "asr"

    def load(self) -> None: ...

    def model_info(self) -> dict:
        return {"model": "fixed-time-double"}

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        for _ in range(ITEMS):
            with self.clock.model():
                time.sleep(PER_ITEM)
        out = workdir / "out.jsonl"
        out.write_bytes(b"x" * OUTPUT_BYTES)
        return StageResult({output_key("asr", self.settings, shard_id): out})


def _setup(root: Path, n: int, read_ahead: bool) -> tuple[Settings, Engine]:
    s = PipelineSettings(input_url=str(root / "raw"), output_url=str(root / "out"),
                         scratch_dir=str(root / "scratch"), prefetch_shards=1)
    (root / "raw").mkdir(parents=True)
    for i in range(n):
        (root / "raw" / s.shard_name(i)).write_bytes(b"\0" * INPUT_BYTES)
    return s, Engine(s, PIPELINE, FixedTimeModel(s), SlowStore(root / "raw"),
                     SlowStore(root / "out"), read_ahead=read_ahead)


def _busy(model: float, wall: float) -> float:
    return round(model / wall, 3)


def _run_naive(s: Settings, ex: Engine, n: int) -> float:
    model, t_first = 0.0, None
    t0 = time.monotonic()
    for i in range(n):
        rec = ex.run(i).record
        assert rec is not None, f"shard {i} was already done"
        model += rec.model_seconds
        if t_first is None:
            t_first = rec.fetch_seconds
    return _busy(model, time.monotonic() - t0 - (t_first or 0))


def _run_ours(s: Settings, ex: Engine, n: int) -> float:
    """The task body of common.queue.worker: received -> prefetch; run with the prefetched
    inputs."""
    pre = Prefetcher(ex.name, ex.fetch, lambda i: False, s)
    model, t_first = 0.0, None
    t0 = time.monotonic()
    pre.submit(0)
    for i in range(n):
        if i + 1 < n:
            pre.submit(i + 1)  # the reserved message's task_received
        tf = time.monotonic()
        ex.fetch_ahead(i)  # what the attempt finds ready (measured only for the first)
        if t_first is None:
            t_first = time.monotonic() - tf
        rec = ex.attempt(i, check_done=False).record
        assert rec is not None, f"shard {i}: no done record"
        model += rec.model_seconds
    return _busy(model, time.monotonic() - t0 - (t_first or 0))


def busy_fraction(quick: bool) -> list[dict]:
    n = 3 if quick else 8
    with tempfile.TemporaryDirectory() as d:
        s1, ex1 = _setup(Path(d) / "a", n, read_ahead=True)
        ours = _run_ours(s1, ex1, n)
        s2, ex2 = _setup(Path(d) / "b", n, read_ahead=False)
        naive = _run_naive(s2, ex2, n)
    return [{"name": f"model busy fraction ({n} shards, {ITEMS * PER_ITEM:.0f}s model, "
                     f"{INPUT_BYTES / BANDWIDTH:.1f}s download each)",
             "ours": ours, "baseline": naive, "ratio": round(ours / naive, 2),
             "goal": "ours >= 0.95", "unit": "fraction"}]


def enqueue_speed(quick: bool) -> list[dict]:
    with tempfile.TemporaryDirectory() as d, private_redis(Path(d)) as url:
        return _enqueue_speed(url, quick)


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    """A redis-server of the bench's own on a free loopback port: never someone's 6379."""
    import shutil
    import socket
    import subprocess

    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("the enqueue bench needs redis-server installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def _enqueue_speed(url: str, quick: bool) -> list[dict]:
    import redis

    from common.queue.publish import plain_publish, publish_shards
    from services.stages import make_app

    r = redis.Redis.from_url(url)
    app = make_app("onsei", Settings(broker_url=url))
    total = 10_000 if quick else 50_000
    t0 = time.perf_counter()
    publish_shards(app, "asr", range(total), "tokenize")
    ours = time.perf_counter() - t0
    r.flushdb()
    sample = 1_000 if quick else 5_000
    t0 = time.perf_counter()
    plain_publish(app, "asr", range(sample), "tokenize")
    plain = (time.perf_counter() - t0) * total / sample
    r.flushdb()
    return [{"name": f"enqueue {total:,} shards (plain loop timed on {sample:,}, scaled)",
             "ours": round(ours, 2), "baseline": round(plain, 1),
             "ratio": round(plain / ours, 1), "goal": "ours < 5 s", "unit": "s"}]


ROWS = [busy_fraction, enqueue_speed]
