"""The held-out onset's scoring and pick on hand-made clips (no model needed)."""

from __future__ import annotations

import numpy as np

from research.wild.overlap_onset import Clip, pick


def _clip(db: int | None, probs: list[float], pitch: float = 0.0) -> Clip:
    return Clip("v" if db is None else "v|w", db, 0, np.array(probs), pitch)


def test_a_clip_scores_its_loud_frames_at_the_onset_or_the_pitch_test_over_the_floor() -> None:
    c = _clip(0, [0.1, 0.4, 0.6, 0.9], pitch=0.6)
    assert c.score(0.5, 0.0) == 0.5 and c.score(0.3, 0.0) == 0.75
    assert c.score(0.5, 0.5) == 0.6  # the pitch test's, over the floor and larger
    assert c.score(0.5, 0.7) == 0.5  # under the floor: the detector's
    assert _clip(None, []).score(0.5, 0.0) == 0.0


def test_the_pick_keeps_single_lines_clear_and_takes_the_highest_onset_on_a_tie() -> None:
    single = _clip(None, [0.6, 0.6, 0.1])  # flagged at onsets up to 0.6
    mixed = [_clip(0, [0.5, 0.5, 0.1]), _clip(5, [0.8, 0.8, 0.8])]
    assert pick([single, *mixed], 0.0) == 0.8  # 0.625-0.8 hold the one mixture; 0.8 highest
    assert pick([_clip(None, [0.0]), *mixed], 0.0) == 0.5  # no single in the way: both mixtures
