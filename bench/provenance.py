"""Takedowns at corpus scale, and the contamination scrub (docs/provenance.md, "Measured").

**Takedown** (``python -m bench --only provenance``): the query every export and ``onsei
takedown`` run (services/ops/provenance/resolve.py), over a synthetic index in Parquet as the
corpus tables are at scale: N segments (``seg``: id, shard, key, corpus speaker, dedup cluster;
ten segments an input key, 2,000 a shard, 50 a speaker, 5 % in clusters of 2-4 copies across
shards) and their keys' provenance (``prov``: a source per key, three keys a source), with
three requests (a source, a key, a voice). Timed at N/4 and N in one process; the projection to
200,000,000 segments scales the larger linearly (one scan of each table per join) and by the
cores of a 16-core node against the threads DuckDB had here. Goal: a takedown over 200 M
segments answers in minutes on one node.

**Scrub** (bench/provenance_scrub.py): recall of embedded test utterances and false removals.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET = 200_000_000
NODE_CORES = 16
GOAL_SECONDS = 600.0


def _write(root: Path, n: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    step = 2_000_000
    for part, lo in enumerate(range(0, n, step)):
        m = min(step, n - lo)
        i = np.arange(lo, lo + m)
        key_n = i // 10
        shard = i // 2000
        speaker = (rng.integers(0, max(1, n // 50), m)).astype(np.int64)
        in_cluster = rng.random(m) < 0.05
        cluster = np.where(in_cluster, rng.integers(0, max(1, n // 60), m), -1)
        ids = pa.array([f"k{k}_{j % 10:04d}@{s:06d}" for k, j, s in zip(key_n, i, shard,
                                                                       strict=True)])
        seg = pa.table({
            "id": ids, "shard": pa.array(shard, pa.int64()),
            "key": pa.array([f"k{k}" for k in key_n]),
            "speaker": pa.array([f"spk{x:08d}" for x in speaker]),
            "cluster": pa.array([f"c{x}" if x >= 0 else None for x in cluster], pa.string())})
        pq.write_table(seg, root / f"seg-{part:05d}.parquet")
        first = (lo + 9) // 10
        keys = np.arange(first, (lo + m + 9) // 10)
        prov = pa.table({"shard": pa.array(keys * 10 // 2000, pa.int64()),
                         "key": pa.array([f"k{k}" for k in keys]),
                         "source": pa.array([f"https://video.example/{k // 3}" for k in keys])})
        pq.write_table(prov, root / f"prov-{part:05d}.parquet")


def _time(root: Path, threads: int) -> tuple[float, int]:
    import duckdb

    from services.ops.provenance.requests import Takedown
    from services.ops.provenance.resolve import resolve

    reqs = [Takedown(id="src", kind="source", value="https://video.example/1234",
                     requested_by="bench", reason="bench", requested_at=0.0),
            Takedown(id="key", kind="key", value="k777", requested_by="bench", reason="bench",
                     requested_at=0.0),
            Takedown(id="voice", kind="voice", value="sample.wav", requested_by="bench",
                     reason="bench", requested_at=0.0, threshold=0.8, speakers=["spk00000042"])]
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    try:
        t0 = time.perf_counter()
        res = resolve(con, reqs, f"read_parquet('{root}/prov-*.parquet')",
                      f"read_parquet('{root}/seg-*.parquet')")
        took = time.perf_counter() - t0
    finally:
        con.close()
    return took, sum(len(v) for v in res.ids.values()) + len(res.keys)


def takedown_rows(quick: bool) -> list[dict]:
    n = 2_000_000 if quick else 20_000_000
    threads = os.cpu_count() or 1
    out = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-takedown-") as d:
        times = {}
        for size in (n // 4, n):
            root = Path(d) / str(size)
            root.mkdir()
            _write(root, size)
            times[size], _ = _time(root, threads)
    here = times[n] * TARGET / n  # on this machine's threads, linear in N
    projected = here * threads / NODE_CORES
    for size, took in times.items():
        out.append({"name": f"takedown over {size:,} segments (DuckDB over Parquet, "
                            f"{threads} threads)", "ours": round(took, 2), "baseline": None,
                    "ratio": None, "goal": "", "unit": "s"})
    out.append({"name": f"takedown over {TARGET:,} segments, projected on these {threads} "
                        "threads", "ours": round(here, 1), "baseline": GOAL_SECONDS,
                "ratio": round(here / GOAL_SECONDS, 3), "goal": f"<= {GOAL_SECONDS:.0f} s",
                "unit": "s"})
    out.append({"name": f"takedown over {TARGET:,} segments, projected to {NODE_CORES} cores",
                "ours": round(projected, 1), "baseline": GOAL_SECONDS,
                "ratio": round(projected / GOAL_SECONDS, 3),
                "goal": f"<= {GOAL_SECONDS:.0f} s (minutes on one node)", "unit": "s"})
    return out


def scrub_rows(quick: bool) -> list[dict]:
    from bench.provenance_scrub import _rows

    return _rows(quick)


ROWS = [takedown_rows, scrub_rows]
