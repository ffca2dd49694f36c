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


def test_pieces_scored_from_their_segments_frames(sphinx_voices) -> None:
    """The writer scores a piece of a segment from the segment's frames (``Frames.clip``), not
    its own: on segments of 2-4 real lines, single voices and mixtures in turn, the whole
    segment's score is the same, and a piece's differs from what its own frames give by less
    than they differ from those of the same piece 10 ms later (the test's own 20 ms grid)."""
    from common.shards.audio import resample
    from services.enhance.quality.overlap import frames

    lines = [c for v in sphinx_voices.values() for c in v]
    mixed = [(a[:n] + b[:n] * (_rms(a[:n]) / _rms(b[:n]))).astype(np.float32)
             for a, b in zip(sphinx_voices["librivox"], sphinx_voices["cards"])
             for n in [min(a.size, b.size)]]
    rng = np.random.default_rng(0)
    sliced, moved = [], []
    for _ in range(12):
        pick = rng.choice(len(lines) + len(mixed), int(rng.integers(2, 5)))
        x = np.concatenate([(lines + mixed)[j] for j in pick])
        seg = frames(resample(x, SR, 8000))
        assert seg.share() == overlap(x)
        for _ in range(3):
            a = round(float(rng.uniform(0, x.size / SR * 0.5)), 3)
            b = round(x.size * (1.0 if rng.random() < 0.5 else float(rng.uniform(0.7, 1.0))))
            piece, later = x[round(a * SR):b], x[round((a + 0.01) * SR):b]
            own = overlap(piece)
            assert own is not None
            sliced.append(abs(seg.clip(a, piece.size / SR).share() - own))
            moved.append(abs((overlap(later) or 0.0) - own))
    assert np.mean(sliced) <= np.mean(moved) + 0.01
    assert np.mean(np.array(sliced) == 0) >= 0.4  # most pieces score the same to the bit


def test_a_clip_takes_its_frames_by_time_and_its_own_loud_ones() -> None:
    """Frames every 20 ms: 0.2 s in is frame 10; loud against the stretch's own loud frames (a
    quiet stretch of a loud segment has loud frames of its own)."""
    from services.enhance.quality.overlap import Frames

    power = np.array([1.0] * 10 + [1e-4] * 10 + [1e-9] * 2, np.float32)
    periodic = np.arange(power.size) % 2 == 0
    seg = Frames(periodic, power, power >= 1e-3)
    quiet = seg.clip(0.2, 0.065 + 11 * 0.02)  # frames 10-21 fit in it, 20-21 much quieter
    assert np.array_equal(quiet.power, power[10:22])
    assert quiet.loud.tolist() == [True] * 10 + [False] * 2
    assert quiet.share() == min(1.0, 0.5 / 0.083) and seg.clip(0.2, 0.3).share() == 1.0
    assert seg.clip(0.4, 0.06).power.size == 0 and seg.clip(0.4, 0.06).share() == 0.0
