"""Chunked streaming through the real Sidon loader with an identity-like pair: no seams."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.factories.sidon import build_small_sidon
from services.enhance.chunking import ChunkGeometry, pad_segment, split_segment
from services.enhance.flow import Enhancer
from services.enhance.segments import CutSegment, SegmentSpec
from services.enhance.settings import EnhanceSettings
from services.enhance.sidon import SidonBackend

RATE = 16000


@pytest.fixture(scope="module")
def identity_backend(tmp_path_factory: pytest.TempPathFactory) -> SidonBackend:
    d = build_small_sidon(tmp_path_factory.mktemp("sidon-id"), identity=True)
    b = SidonBackend(EnhanceSettings(enhance_sidon_model=str(d), enhance_device="cpu"))
    b.load()
    return b


def sweep(seconds: float, f0: float = 50.0, f1: float = 500.0, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    k = (f1 - f0) / seconds
    return (0.5 * np.sin(2 * np.pi * (f0 * t + 0.5 * k * t * t))).astype(np.float32)


def enhance(backend, geom: ChunkGeometry, signals: list[np.ndarray], batch: int = 3):
    segs = [CutSegment(i, SegmentSpec("k", i, 0.0, x.size / RATE, "", None), x.size,
                       pad_segment(x, 0, x.size, geom.margin)) for i, x in enumerate(signals)]
    eng = Enhancer(backend, geom, batch, rounds=1)
    out = list(eng.run(segs))
    return [s.serial for s, _ in out], [y for _, y in out], eng


def upsampled(x: np.ndarray) -> np.ndarray:
    """What the identity pair computes, minus its level offsets: torch's linear 3x upsampling
    (output sample i sits at input position i/3 - 1/3)."""
    pos = np.clip(np.arange(3 * x.size) / 3.0 - 1 / 3, 0, x.size - 1)
    return np.interp(pos, np.arange(x.size), x)


def seam_report(y: np.ndarray, geom: ChunkGeometry, n_seams: int) -> tuple[float, float]:
    """(worst jump ratio, worst envelope deviation) around the seams of a 48 kHz output."""
    d2 = np.abs(y[2:] - 2 * y[1:-1] + y[:-2])
    xf = max(geom.crossfade, 320) * 3
    jumps, env = [], []
    for k in range(1, n_seams + 1):
        s = 3 * k * geom.chunk
        local = d2[s - xf:s + xf].max()
        before = d2[s - 3 * 8000:s - 2 * xf].max()  # same frequencies, 0.5 s earlier
        jumps.append(local / before)
        w = y[s - 3 * 1600:s + 3 * 1600]  # +-100 ms: RMS of a 0.5 amplitude sine is 0.354
        env.append(abs(np.sqrt(np.mean(w * w)) / (0.5 / np.sqrt(2)) - 1))
    return max(jumps), max(env)


def test_long_sweep_has_no_seams(identity_backend: SidonBackend) -> None:
    geom = ChunkGeometry.from_seconds(RATE, 10.0, 0.5, 0.04, 320)
    x = sweep(65.0)
    _, (y,), eng = enhance(identity_backend, geom, [x])
    assert y.size == 3 * x.size  # 48 kHz, exactly the segment's length
    assert eng.chunks == 7
    jump, env = seam_report(y, geom, 6)
    assert jump < 1.5, f"a seam jumps {jump:.2f}x the sweep's own curvature"
    assert env < 0.03, f"level dips/bumps {env:.1%} at a seam"
    # Away from the seams the output is the input (linear 3x upsampling, level offsets <= 0.03).
    ref = upsampled(x)
    assert np.max(np.abs(y - ref)[48000:-48000]) < 0.04


@pytest.mark.parametrize("context,crossfade,shows", [
    (0, 0, "dip"),  # no context: the model's edge effects land in the output
    (8000, 0, "jump"),  # context but no crossfade: row-to-row level steps remain
])
def test_naive_streaming_shows_seams(identity_backend: SidonBackend, context: int,
                                     crossfade: int, shows: str) -> None:
    # The control: the same detector finds the seams when streaming is naive.
    geom = ChunkGeometry(chunk=160000, context=context, hop=320, crossfade=crossfade)
    _, (y,), _ = enhance(identity_backend, geom, [sweep(65.0)])
    jump, env = seam_report(y, geom, 6)
    assert (env > 0.1) if shows == "dip" else (jump > 3.0)


def test_many_lengths_keep_order_and_length(identity_backend: SidonBackend) -> None:
    geom = ChunkGeometry.from_seconds(RATE, 2.0, 0.25, 0.04, 320)
    rng = np.random.default_rng(0)
    lengths = [int(n) for n in rng.integers(RATE // 10, 7 * RATE, size=23)] + [2 * RATE, 4 * RATE]
    signals = [sweep(n / RATE, 100, 300) for n in lengths]
    serials, outs, eng = enhance(identity_backend, geom, signals, batch=4)
    assert serials == list(range(len(lengths)))
    assert [y.size for y in outs] == [3 * n for n in lengths]
    assert eng.chunks == sum(len(split_segment(0, n, geom)) for n in lengths)
    for x, y in zip(signals, outs):  # every output is its own input, not a neighbour's
        ref = upsampled(x)
        assert np.max(np.abs(y - ref)[3 * 320:-3 * 320]) < 0.04


def test_geometry_aligns_to_frames() -> None:
    g = ChunkGeometry.from_seconds(RATE, 10.0, 0.5, 0.04, 320)
    assert (g.chunk, g.context, g.window) == (160000, 8000, 176000)
    items = split_segment(0, 12345, g)
    assert all(it.length % 320 == 0 and it.length <= g.window for it in items)
    assert sum(it.core_len for it in items) == 12345
