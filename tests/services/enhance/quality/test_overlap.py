"""``quality.overlap``: two real voices talking at once (pocketsphinx's LibriVox reader and the
"cards" speaker mixed at one level) score above either voice alone; too short a clip is not
scored; a tone (one period throughout) scores 0."""

from __future__ import annotations

import numpy as np

from services.enhance.quality.overlap import overlap

SR = 16000


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def test_two_voices_at_once_score_above_each_alone(sphinx_voices) -> None:
    """Every LibriVox line mixed with every cards line at one level (25 mixtures): a weak cue
    (docs/quality.md, overlap), so the test is on the whole set, not on each mixture."""
    alone, mixed = [], []
    for a in sphinx_voices["librivox"]:
        for b in sphinx_voices["cards"]:
            n = min(a.size, b.size)
            alone += [overlap(a[:n]), overlap(b[:n])]
            mixed.append(overlap((a[:n] + b[:n] * (_rms(a[:n]) / _rms(b[:n])))
                                 .astype(np.float32)))
    assert all(x is not None for x in alone + mixed)
    assert max(alone) < 0.3  # no single voice reads as an overlap on the filter's scale
    assert sum(x >= 0.3 for x in mixed) >= 5
    assert np.mean(mixed) > 3 * np.mean(alone)


def test_short_and_tonal_clips() -> None:
    assert overlap(np.zeros(SR // 4, np.float32)) is None
    t = np.arange(2 * SR) / SR
    tone = (0.3 * np.sin(2 * np.pi * 150 * t)).astype(np.float32)
    assert overlap(tone) == 0.0
