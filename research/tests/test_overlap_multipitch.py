"""The multi-pitch experiment's frame rule on hand-made posteriorgrams (no network needed)."""

from __future__ import annotations

import numpy as np

from research.wild.multipitch_model import BASE, PER_SEMITONE
from research.wild.overlap_multipitch import Rule, fires, mixture_lines

BINS = 264


def _contour(*hz_levels: tuple[float, float], frames: int = 10) -> np.ndarray:
    c = np.zeros((frames, BINS), np.float32)
    for hz, level in hz_levels:
        k = int(np.round(12 * PER_SEMITONE * np.log2(hz / BASE)))
        c[:, k] = level
        c[:, k - 1] = c[:, k + 1] = level / 2
    return c


def test_two_voices_fire_one_voice_and_its_octave_do_not() -> None:
    rule = Rule(smooth=1)
    assert fires(_contour((120, 0.5), (190, 0.4)), rule).all()
    assert not fires(_contour((120, 0.5)), rule).any()
    assert not fires(_contour((120, 0.5), (240, 0.4)), rule).any()  # its octave
    assert not fires(_contour((120, 0.5), (180, 0.4)), rule).any()  # a fifth: partials 2 and 3


def test_weak_or_out_of_band_second_peak_does_not_fire() -> None:
    rule = Rule(smooth=1)
    assert not fires(_contour((120, 0.5), (190, 0.1)), rule).any()
    assert not fires(_contour((120, 0.5), (380, 0.4)), rule).any()  # above hi_hz


def test_mixture_lines_follow_the_bench_draws() -> None:
    from bench.wild.overlap import mixtures

    rng = np.random.default_rng(0)
    v = {k: [rng.standard_normal(n).astype(np.float32) for n in sizes]
         for k, sizes in {"a": (20000, 8000), "b": (17000,), "c": (30000, 16000)}.items()}
    singles, mixed = mixtures(v)
    lines = mixture_lines(singles)
    assert len(lines) == len(mixed)
    assert all(name.split("|")[0] == singles[i][0] for (_, name, _), i in zip(mixed, lines))
