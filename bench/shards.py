"""Shard read throughput: ``iter_shard`` vs a bare ``tarfile`` streaming read of the same shard.

The shard (~1 GB; quick: ~100 MB) holds audio-like members: incompressible bytes of 100 KB to
3 MB (a few seconds to a minute of FLAC) each with a small ``.json``. The page cache is warmed
first and the two readers alternate, best of several runs each: the ratio is the reader's CPU
cost, not the disk's. Goal >= 0.9x.
"""

from __future__ import annotations

import io
import os
import random
import tarfile
import tempfile
import time
from pathlib import Path


def make_shard(path: Path, total_bytes: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    blob = os.urandom(3 << 20)
    written = i = 0
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        while written < total_bytes:
            n = rng.randint(100_000, 3_000_000)
            start = rng.randint(0, len(blob) - n)
            for ext, data in (("flac", blob[start:start + n]), ("json", b'{"source_path": "x"}')):
                info = tarfile.TarInfo(f"{i:09d}.{ext}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            written += n
            i += 1
    return i


def _bare_tarfile(path: Path) -> int:
    n = 0
    with tarfile.open(path, "r|") as tf:
        for m in tf:
            if m.isfile():
                n += len(tf.extractfile(m).read())
    return n


def _iter_shard(path: Path) -> int:
    from common.shards.tar import MemberError, iter_shard

    n = 0
    for item in iter_shard(path, max_member_bytes=2 << 30):
        assert not isinstance(item, MemberError), item
        n += sum(len(v) for v in item.files.values())
    return n


def read_throughput(quick: bool) -> list[dict]:
    total = (100 if quick else 1000) * 10**6
    rounds = 3
    with tempfile.TemporaryDirectory(prefix="onsei-bench-shards-") as d:
        path = Path(d) / "shard-000000.tar"
        make_shard(path, total)
        size = path.stat().st_size
        with open(path, "rb") as f:  # warm the page cache
            while f.read(16 << 20):
                pass
        best = {"ours": float("inf"), "baseline": float("inf")}
        counts = {}
        for _ in range(rounds):
            for name, fn in (("ours", _iter_shard), ("baseline", _bare_tarfile)):
                t0 = time.perf_counter()
                counts[name] = fn(path)
                best[name] = min(best[name], time.perf_counter() - t0)
        assert counts["ours"] == counts["baseline"], counts
    ours = size / best["ours"] / 1e6
    base = size / best["baseline"] / 1e6
    return [{"name": f"shard read iter_shard vs tarfile r| ({size / 1e6:.0f} MB, page cache)",
             "ours": ours, "baseline": base, "ratio": ours / base, "goal": ">= 0.9",
             "unit": "MB/s"}]


ROWS = [read_throughput]
