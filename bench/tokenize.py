"""Tokenize stage: padding waste of length bucketing, CPU throughput of bucketed batches vs one
segment at a time (the library's ``encode_code``), and agreement of codes and embeddings with
encoding each segment alone. Small NeuCodec (real classes, random weights, 1 thread).

Random weights give near-constant codes, so code agreement is trivially high here; the
embedding agreement (frames whose pre-quantiser embedding is within 1e-4 of the alone value)
is the honest measure of what batching changes. GPU figures: ``bench/gpu_tokenize.sh``.
"""

from __future__ import annotations

import time

import numpy as np

_MODEL = None


def _lengths_frames(n: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(s * 50) for s in rng.uniform(1.0, 30.0, size=n)]


def padding(quick: bool) -> list[dict]:
    from services.tokenize.batching import plan_batches

    lengths = _lengths_frames(300 if quick else 3000)
    plan = plan_batches(lengths, max_frames=240 * 50, max_items=64, max_waste=0.03)
    # baseline: batches of 16 in arrival order, padded to the longest
    chunks = [lengths[i:i + 16] for i in range(0, len(lengths), 16)]
    base_pad = sum(len(c) * max(c) for c in chunks)
    base = 1 - sum(lengths) / base_pad
    return [{"name": "tokenize: padding waste, length buckets vs arrival-order B=16 (1-30 s)",
             "ours": round(100 * plan.waste, 2), "baseline": round(100 * base, 1),
             "ratio": round(base / max(plan.waste, 1e-9), 1), "goal": "ours <= 3 %",
             "unit": "% of frames"},
            {"name": "tokenize: mean segments per batch (240 s budget, <= 64)",
             "ours": round(len(lengths) / len(plan.batches), 1), "baseline": 1.0,
             "ratio": round(len(lengths) / len(plan.batches), 1), "goal": "> 1",
             "unit": "segments"}]


def _model():
    global _MODEL
    if _MODEL is None:
        import torch

        from fixtures.factories.neucodec import FULL_SIZE, build_small_model
        from services.tokenize.loader import trim_semantic_layers

        torch.set_num_threads(1)
        _MODEL = build_small_model(codec_sizes=FULL_SIZE)  # the acoustic encoder as released
        trim_semantic_layers(_MODEL, "neucodec")
    return _MODEL


def _segments(quick: bool) -> list[np.ndarray]:
    """Groups of near-equal lengths (within 1 %), as a long shard's neighbours in length are."""
    rng = np.random.default_rng(1)
    groups, per = (2, 3) if quick else (4, 4)
    secs = [b * (1 + rng.uniform(-0.01, 0)) for b in rng.uniform(0.8, 2.5, size=groups)
            for _ in range(per)]
    out = []
    for i, s in enumerate(secs):
        t = np.arange(int(s * 16000)) / 16000
        out.append((0.3 * np.sin(2 * np.pi * (120 + 40 * i) * t)
                    + 0.02 * rng.standard_normal(t.size)).astype(np.float32))
    return out


def throughput(quick: bool) -> list[dict]:
    from services.tokenize.batching import plan_batches
    from services.tokenize.encode import encode_batch, prepare

    m = _model()
    audio = _segments(quick)
    seconds = sum(a.size for a in audio) / 16000
    results: dict[str, tuple[float, list, list]] = {}
    encode_batch(m, [prepare(m, "neucodec", audio[0][:8000])], "exact")  # warm-up
    for policy in ("library", "exact", "stitched", "padded"):
        t0 = time.perf_counter()
        items = [prepare(m, "neucodec", a) for a in audio]
        plan = plan_batches([it.frames for it in items], max_frames=240 * 50, max_waste=0.03)
        codes: list = [None] * len(items)
        embs: list = [None] * len(items)
        for b in plan.batches if policy != "library" else [[i] for i in range(len(items))]:
            c, e = encode_batch(m, [items[i] for i in b], policy, return_embeddings=True)
            for i, ci, ei in zip(b, c, e):
                codes[i], embs[i] = ci, ei
        results[policy] = (time.perf_counter() - t0, codes, embs)
    base_t, base_c, base_e = results["library"]
    rows = []
    for policy in ("exact", "stitched", "padded"):
        t, c, e = results[policy]
        frames = sum(x.size for x in base_c)
        same = sum(int((x == y).sum()) for x, y in zip(c, base_c))
        close = sum(int((np.abs(x - y).max(axis=0) <= 1e-4).sum()) for x, y in zip(e, base_e))
        rows += [
            {"name": f"tokenize: CPU speed, {policy} buckets vs one at a time "
                     f"({len(audio)} segs, {seconds:.0f} s)",
             "ours": round(seconds / t, 3), "baseline": round(seconds / base_t, 3),
             "ratio": round(base_t / t, 2), "goal": ">= 1", "unit": "audio s / s"},
            {"name": f"tokenize: {policy} code agreement with alone (random weights)",
             "ours": round(100 * same / frames, 2), "baseline": 100.0,
             "ratio": round(same / frames, 4), "goal": ">= 99.5 %", "unit": "% of codes"},
            {"name": f"tokenize: {policy} embedding agreement with alone (|d| <= 1e-4)",
             "ours": round(100 * close / frames, 2), "baseline": 100.0,
             "ratio": round(close / frames, 4), "goal": "100 % for exact, stitched",
             "unit": "% of frames"},
        ]
    return rows


ROWS = [padding, throughput]
