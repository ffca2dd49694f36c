"""The lower-minimum bench's counting, the held-out music bench's joined files, and the prompt
decoder's sample scaling."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bench.short_segments import only_short, over_reference
from bench.wild.music_held import joined
from fixtures.prompt_voices import _floats


def _seg(start: float, end: float, reason: str) -> SimpleNamespace:
    return SimpleNamespace(start=start, end=end, reason=reason)


def test_only_segments_flagged_too_short_alone_and_over_the_minimum_count() -> None:
    line = SimpleNamespace(segments=[
        _seg(0.0, 0.7, "too_short"),  # kept at 0.5 s
        _seg(1.0, 1.4, "too_short"),  # under 0.5 s still
        _seg(2.0, 2.8, "too_short,hallucination"),  # another flag drops it anyway
        _seg(3.0, 5.0, "")])
    assert [s.start for s in only_short(line, 0.5)] == [0.0]
    assert only_short(line, 0.75) == []


def test_a_segment_over_speech_needs_half_its_length_covered() -> None:
    spans = [(1.0, 2.0)]
    assert over_reference(_seg(1.5, 2.3, "too_short"), spans)
    assert not over_reference(_seg(1.8, 2.6, "too_short"), spans)


def test_joined_clips_lie_where_their_spans_say() -> None:
    clips = [np.full(16000, 0.5, np.float32), np.full(8000, -0.5, np.float32)]
    audio, spans = joined(clips, 0)
    for c, (a, b) in zip(clips, spans):
        piece = audio[round(a * 16000):round(b * 16000)]
        assert piece.size == c.size and np.all(piece == c[0])


def test_decoded_integer_samples_scale_to_one() -> None:
    got = _floats(np.array([[-32768, 0, 16384]], np.int16))
    assert got.dtype == np.float32 and got.tolist() == [-1.0, 0.0, 0.5]
