"""Enhance stage: padding waste of our packing vs pad-to-longest, engine throughput on CPU with
the small Sidon-contract pair, RNNoise's SNR gain. GPU figures: ``bench/gpu_enhance.sh``.

Lengths are a realistic 1-30 s mix (uniform, seeded). Throughput compares, on the same
segments and the same backend, our engine (chunks packed into fixed [B, 11 s] rows, features of
the next batch prepared while the model runs) against pad-to-longest batches of whole segments.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

RATE = 16000


def _mix(n: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(s * RATE) for s in rng.uniform(1.0, 30.0, size=n)]


def padding(quick: bool) -> list[dict]:
    from services.enhance.chunking import ChunkGeometry
    from services.enhance.packing import pad_to_longest_fraction, simulate

    geom = ChunkGeometry.from_seconds(RATE, 10.0, 0.5, 0.04, 320)
    lengths = _mix(300 if quick else 3000)
    st = simulate(lengths, geom, batch=16, round_items=4 * 16)
    base = pad_to_longest_fraction(lengths, 16)
    return [
        {"name": "enhance: padding waste, packed chunks vs pad-to-longest (B=16, 1-30 s)",
         "ours": round(100 * st.padded_fraction, 2), "baseline": round(100 * base, 1),
         "ratio": round(base / max(st.padded_fraction, 1e-9), 1), "goal": "ours <= 3 %",
         "unit": "% of model input"},
        {"name": "enhance: input not kept (padding + 0.5 s contexts) vs pad-to-longest",
         "ours": round(100 * st.overhead_fraction, 2), "baseline": round(100 * base, 1),
         "ratio": round(base / max(st.overhead_fraction, 1e-9), 2), "goal": "ours < baseline",
         "unit": "% of model input"},
    ]


def _segments(lengths: list[int], margin: int):
    from services.enhance.chunking import pad_segment
    from services.enhance.segments import CutSegment, SegmentSpec

    rng = np.random.default_rng(1)
    for i, n in enumerate(lengths):
        x = (0.1 * rng.standard_normal(n)).astype(np.float32)
        yield CutSegment(i, SegmentSpec("k", i, 0.0, n / RATE, "", None), n,
                         pad_segment(x, 0, n, margin))


def throughput(quick: bool) -> list[dict]:
    import torch

    from fixtures.factories.sidon import build_small_sidon
    from services.enhance.chunking import ChunkGeometry
    from services.enhance.flow import Enhancer
    from services.enhance.settings import EnhanceSettings
    from services.enhance.sidon import SidonBackend

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    lengths = _mix(24 if quick else 96, seed=2)
    seconds = sum(lengths) / RATE
    batch = 8
    with tempfile.TemporaryDirectory(prefix="onsei-bench-sidon-") as d:
        b = SidonBackend(EnhanceSettings(enhance_sidon_model=str(build_small_sidon(d)),
                                         enhance_device="cpu"))
        b.load()
        geom = ChunkGeometry.from_seconds(RATE, 10.0, 0.5, 0.04, 320)
        b.run(b.prepare(np.zeros((batch, geom.window), np.float32)))  # warm-up
        t0 = time.perf_counter()
        eng = Enhancer(b, geom, batch, rounds=4)
        for _ in eng.run(_segments(lengths, geom.margin)):
            pass
        ours = time.perf_counter() - t0
        # Baseline: whole segments, batches of 8 in arrival order, padded to the longest.
        t0 = time.perf_counter()
        for i in range(0, len(lengths), batch):
            grp = lengths[i:i + batch]
            w = -(-max(grp) // 320) * 320
            rows = np.zeros((len(grp), w), np.float32)
            for j, n in enumerate(grp):
                rows[j, :n] = 0.1
            b.run(b.prepare(rows))
        base = time.perf_counter() - t0
    return [
        {"name": "enhance: CPU engine, small Sidon pair, 10 s chunks, B=8 (audio s/s)",
         "ours": round(seconds / ours, 1), "baseline": round(seconds / base, 1),
         "ratio": round(base / ours, 2), "goal": ">= 1 vs pad-to-longest", "unit": "x realtime"},
        {"name": "enhance: CPU engine chunks per second (small pair)",
         "ours": round(eng.chunks / ours, 2), "baseline": None, "ratio": None,
         "goal": "info", "unit": "chunks/s"},
    ]


def snr(quick: bool) -> list[dict]:
    import shutil

    if shutil.which("espeak-ng") is None:
        return []
    from fixtures.speechgen import noisy_speech, si_snr
    from services.enhance.chunking import ChunkGeometry, pad_segment
    from services.enhance.denoise import RNNoiseBackend
    from services.enhance.flow import Enhancer
    from services.enhance.segments import CutSegment, SegmentSpec

    rows = []
    for snr_in in (0.0, 10.0):
        clean, noisy = noisy_speech(snr_in, seconds=6.0 if quick else 20.0)
        backend = RNNoiseBackend()
        geom = ChunkGeometry.from_seconds(48000, 10.0, 0.5, 0.04, backend.hop)
        seg = CutSegment(0, SegmentSpec("k", 0, 0.0, 1.0, "", None), noisy.size,
                         pad_segment(noisy, 0, noisy.size, geom.margin))
        t0 = time.perf_counter()
        [(_, out)] = list(Enhancer(backend, geom, 4).run([seg]))
        wall = time.perf_counter() - t0
        before, after = si_snr(clean, noisy), si_snr(clean, out)
        rows.append({"name": f"enhance: RNNoise SI-SNR, speech in white noise at {snr_in:g} dB",
                     "ours": round(after, 1), "baseline": round(before, 1),
                     "ratio": round(after - before, 1), "goal": "gain >= 3 dB (ratio = gain)",
                     "unit": "dB"})
    rows.append({"name": "enhance: RNNoise CPU speed (rows on threads, one per core)",
                 "ours": round(clean.size / 48000 / wall, 1), "baseline": None, "ratio": None,
                 "goal": "info", "unit": "x realtime"})
    return rows


ROWS = [padding, throughput, snr]
