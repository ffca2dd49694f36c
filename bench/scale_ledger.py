"""Ledger helpers for the scale bench: a store that counts the S3 requests a call would make,
a ledger topped up to a given size, and shards hidden from it for a while."""

from __future__ import annotations

import json
import math
import multiprocessing
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast
from unittest import mock

from common.settings import Settings
from common.storage.base import Store
from services.stages import STAGES, open_ledger

PAGE = 1000  # keys per ListObjectsV2 page


OPS = ("LIST", "GET", "HEAD", "PUT", "DELETE")


class Tally:
    """Request counts in shared memory: threads and forked processes (a fresh ledger's first
    status reads its records in forked processes: common/ledger/index.py) add to the
    same."""

    def __init__(self) -> None:
        self._a = multiprocessing.Array("q", len(OPS))

    def add(self, op: str, k: int = 1) -> None:
        with self._a.get_lock():
            self._a[OPS.index(op)] += k

    def counts(self) -> Counter:
        return Counter({op: n for op, n in zip(OPS, self._a[:]) if n})


class CountingStore(Store):
    """Wraps a store and counts requests as S3 would bill them: LIST pages of 1,000 keys,
    GET (read_bytes, get_file), HEAD (exists, size), PUT, DELETE."""

    def __init__(self, inner: Store, tally: Tally | None = None) -> None:
        self.inner, self.url = inner, inner.url
        self.parallel_reads = inner.parallel_reads
        self.tally = Tally() if tally is None else tally

    @property
    def counts(self) -> Counter:
        return self.tally.counts()

    @classmethod
    def open(cls, s: Settings) -> CountingStore:
        from common.storage import open_store

        return cls(open_store(s.output_url, s))

    def _n(self, op: str, k: int = 1) -> None:
        self.tally.add(op, k)

    def list(self, prefix: str = "") -> Iterator[str]:
        keys = list(self.inner.list(prefix))
        self._n("LIST", max(1, math.ceil(len(keys) / PAGE)))
        return iter(keys)

    def list_tagged(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        pairs = list(self.inner.list_tagged(prefix))
        self._n("LIST", max(1, math.ceil(len(pairs) / PAGE)))
        return iter(pairs)

    def read_bytes(self, key: str) -> bytes:
        self._n("GET")
        return self.inner.read_bytes(key)

    def get_file(self, key: str, dest: Path) -> Path:
        self._n("GET")
        return self.inner.get_file(key, dest)

    def exists(self, key: str) -> bool:
        self._n("HEAD")
        return self.inner.exists(key)

    def size(self, key: str) -> int:
        self._n("HEAD")
        return self.inner.size(key)

    def put_file(self, src: Path, key: str) -> None:
        self._n("PUT")
        self.inner.put_file(src, key)

    def write_bytes(self, key: str, data: bytes) -> None:
        self._n("PUT")
        self.inner.write_bytes(key, data)

    def delete(self, key: str) -> None:
        self._n("DELETE")
        self.inner.delete(key)


@contextmanager
def counted_store() -> Iterator[Tally]:
    """Every store opened through ``open_store`` meanwhile (by name from common.storage or by
    services.stages's ledgers) counts into one Tally."""
    import common.storage
    import services.stages

    real = common.storage.open_store
    tally = Tally()

    def counted(url: str, s: Settings | None = None) -> CountingStore:
        return CountingStore(real(url, s), tally)

    with mock.patch.object(common.storage, "open_store", counted), \
            mock.patch.object(services.stages, "open_store", counted):
        yield tally


def fill_ledger(s: Settings, shards: int) -> None:
    """Give every stage a done record for ids 0..shards-1: copies of the stage's first record
    (what the run wrote), with the shard fields set. Existing records are kept."""
    led = open_ledger(s)
    root = Path(s.output_url)  # the bench's local store: plain writes, no fsync per record
    for stage in STAGES:
        have = led.done_ids(stage, range(shards))
        first = led.read_done(stage, min(have)) if have else None
        template = first.to_dict() if first is not None else {
            "stage": stage, "wall_seconds": 0.01, "audio_seconds_in": 1.0,
            "audio_seconds_out": 1.0, "finished_at": 0.0}
        for i in range(shards):
            if i in have:
                continue
            rec = {**template, "shard_id": i, "shard": s.shard_name(i)}
            path = root / led.done_key(stage, i)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(json.dumps(rec, indent=1, sort_keys=True).encode())


@contextmanager
def hide_shards(s: Settings, ids: range) -> Iterator[None]:
    """Move these shards' done records (every stage) aside, and back afterwards."""
    root = Path(s.output_url)
    led = open_ledger(s, store=CountingStore.open(s))  # keys only
    side = root.parent / "hidden"
    moved: list[tuple[Path, Path]] = []
    for stage in STAGES:
        for i in ids:
            src = root / led.done_key(stage, i)
            if src.is_file():
                dst = side / led.done_key(stage, i)
                dst.parent.mkdir(parents=True, exist_ok=True)
                src.rename(dst)
                moved.append((dst, src))
    try:
        yield
    finally:
        for dst, src in moved:
            dst.rename(src)


# (name, what it stands for): each call of onsei status in turn over the same ledger
STATUS_CALLS = (
    ("first", "the very first call: no rollup, no local cache (reads every record)"),
    ("machine", "another machine's first call: the rollups the first one wrote"),
    ("repeated", "that machine again: its local cache"),
)


def time_status(s: Settings, ids: range) -> dict[str, object]:
    """``onsei status`` over ``ids`` as each of :data:`STATUS_CALLS`: seconds, the S3 requests
    it would make, and the done counts it printed (equal in every call)."""
    import time

    from services.ops.status.command import collect

    for stage in STAGES:  # the ledger as it was before any status call
        led = open_ledger(s)
        shutil.rmtree(Path(s.output_url) / rollup_dir(led, stage), ignore_errors=True)
    shutil.rmtree(Path(s.scratch_dir) / "ledger-cache", ignore_errors=True)
    other = s.model_copy(update={"scratch_dir": f"{s.scratch_dir}-machine2"})
    shutil.rmtree(Path(other.scratch_dir) / "ledger-cache", ignore_errors=True)
    res: dict[str, object] = {}
    for name, _ in STATUS_CALLS:
        with counted_store() as tally:
            t0, c0 = time.perf_counter(), time.process_time()
            st = collect(s if name == "first" else other, ids)
            res[f"status_{name}_s"] = time.perf_counter() - t0
            res[f"status_{name}_cpu_s"] = time.process_time() - c0  # less load-sensitive
        res[f"status_{name}_requests"] = dict(tally.counts())
        res[f"status_{name}_done"] = {k: v["done"] for k, v in st["stages"].items()}
    return res


def rollup_dir(led: Any, stage: str) -> str:
    from common.ledger import rollup

    return rollup.rollup_key(led, stage, 0).rsplit("/", 1)[0]


def status_rows(res: dict[str, object], n: int) -> list[dict[str, object]]:
    """The bench rows of :func:`time_status`: seconds per call (goal on a machine's first),
    then the requests each would make on S3."""
    rows: list[dict[str, object]] = []
    for name, what in STATUS_CALLS:
        rows.append({"name": f"onsei status --range 0-{n - 1}, {n:,} done x3 stages, local "
                             f"store: {what}", "unit": "s",
                     "ours": round(float(cast(float, res[f"status_{name}_s"])), 2),
                     "baseline": None, "ratio": None, "goal": "" if name == "first" else "<= 3 s"})
        rows.append({"name": "  its CPU seconds (this process, all threads)", "unit": "s",
                     "ours": round(float(cast(float, res[f"status_{name}_cpu_s"])), 2),
                     "baseline": None, "ratio": None, "goal": ""})
        rows.append({"name": f"  its S3 requests ({name}); done counts",
                     "unit": "requests", "ours": json.dumps(res[f"status_{name}_requests"]),
                     "baseline": json.dumps(res[f"status_{name}_done"]), "ratio": None,
                     "goal": ""})
    return rows
