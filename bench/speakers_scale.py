"""The corpus speaker index at scale (services/speakers/index.py): add and search rates on
random 256-d vectors (the hardest case for HNSW: no structure to exploit), memory per speaker,
and the projection to 200,000,000 segments on one 16-core machine (docs/speakers.md, Scale).

    python -m bench.speakers_scale [--n 1000000] [--queries 100000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

CORPUS_SEGMENTS = 200e6
MACHINE_CORES = 16


def measure(n: int, queries: int, threads: int, dtype: str = "bf16", seed: int = 0) -> dict:
    from services.speakers.index import SpeakerIndex
    from services.speakers.link import link

    rng = np.random.default_rng(seed)
    ix = SpeakerIndex(dtype, threads)
    step = 100_000
    add_s = 0.0
    for start in range(0, n, step):
        x = rng.random((min(step, n - start), 256), np.float32)
        t0 = time.perf_counter()
        ix.add(x, np.ones(len(x), np.float32))
        add_s += time.perf_counter() - t0
    q = rng.random((queries, 256), np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    t0 = time.perf_counter()
    ix.nearest(q, 8)
    search_s = time.perf_counter() - t0
    # the whole link step on a batch of which none match (the slowest: every one is new)
    t0 = time.perf_counter()
    got = link(q[:20_000], ix, 0.999, 8)
    link_s = time.perf_counter() - t0
    return {"n": n, "queries": queries, "threads": threads, "dtype": dtype,
            "add_per_s": n / add_s, "search_per_s": queries / search_s,
            "link_20k_new_s": link_s, "link_new": got.new,
            "bytes_per_speaker": ix.memory_bytes / n}


def project(m: dict, segments_per_file_speaker: float) -> dict:
    """Hours on MACHINE_CORES cores for the corpus, every file speaker searched once and, at
    worst, each one a new speaker (added): rates scale with threads (usearch's are
    independent per query)."""
    clusters = CORPUS_SEGMENTS / segments_per_file_speaker
    per_core_add = m["add_per_s"] / m["threads"]
    per_core_search = m["search_per_s"] / m["threads"]
    secs = clusters / (per_core_add * MACHINE_CORES) + clusters / (per_core_search * MACHINE_CORES)
    return {"file_speakers": clusters, "hours_worst": secs / 3600,
            "index_gb_worst": clusters * m["bytes_per_speaker"] / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dtype", default="bf16")
    a = ap.parse_args()
    m = measure(a.n, a.queries, a.threads, a.dtype)
    print(json.dumps({**m, "projection": {str(k): project(m, k) for k in (1, 10, 50)}},
                     indent=1))


if __name__ == "__main__":
    main()
