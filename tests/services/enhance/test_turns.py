"""Speaker changes inside a segment (services/enhance/turns.py): the pauses, the bottom-up merge
of the stretches between them, the cut moved to a word gap with the text split there, and the
output check counting a cut segment's pieces as the segment."""

from __future__ import annotations

import numpy as np
import pytest

from services.enhance.quality.speaker import Windows
from services.enhance.segments import CutSegment, Plan, SegmentSpec
from services.enhance.turns import changes, cut_segment, in_gaps, pauses, pieces, word_gaps
from services.enhance.verify import SegmentMismatch, check_written
from services.records import Word, segment_id


def _windows(voices: list[int], quiet: list[tuple[int, int]] = ()) -> Windows:
    """A clip of 1 s windows every 0.25 s whose embedding is voice ``voices[i]`` (a unit axis,
    a little noise), frames quiet over ``quiet`` (frame ranges)."""
    rng = np.random.default_rng(0)
    n = len(voices)
    emb = np.zeros((n, 8))
    emb[np.arange(n), voices] = 1.0
    emb += 0.05 * rng.standard_normal(emb.shape)
    power = np.ones(25 * n + 75)
    for a, b in quiet:
        power[a:b] = 1e-6
    return Windows(emb.astype(np.float32), np.arange(n) * 25, np.ones(n), power, 100)


def test_pauses_are_the_middle_of_long_enough_quiet_runs() -> None:
    power = np.ones(500)
    power[100:130] = 1e-6  # 0.3 s
    power[300:310] = 1e-6  # 0.1 s: too short
    power[:50] = 1e-6  # the clip's edge: not between speech
    assert pauses(power) == [115]


def test_stretches_of_two_voices_stay_apart_one_voice_merges() -> None:
    two = _windows([0] * 12 + [1] * 12)  # voice 1 from 3.0 s on (centres from 3.5 s)
    cand = [150, 300, 450]  # frames: 1.5, 3.0 and 4.5 s
    assert changes(two, cand, 0.84) == [300]
    one = _windows([0] * 24)
    assert changes(one, cand, 0.84) == []


def _alike(n_a: int, n_b: int, cos: float) -> Windows:
    """Windows of two voices whose embeddings are ``cos`` alike (no noise)."""
    a = np.eye(8)[0]
    b = cos * a + np.sqrt(1 - cos**2) * np.eye(8)[1]
    emb = np.array([a] * n_a + [b] * n_b, np.float32)
    n = n_a + n_b
    return Windows(emb, np.arange(n) * 25, np.ones(n), np.ones(25 * n + 75), 100)


def test_a_cut_in_a_wide_gap_needs_more_alike_voices_to_merge() -> None:
    w = _alike(12, 12, 0.87)  # close voices (window centres from 3.5 s): between the thresholds
    assert changes(w, [350], 0.84) == []
    assert changes(w, [350], 0.84, wide=frozenset({350}), wide_threshold=0.90) == [350]
    assert changes(w, [350], 0.84, wide=frozenset({150}), wide_threshold=0.90) == []
    assert changes(w, [350], 0.84, wide=frozenset({350}), wide_threshold=0.80) == []
    one = _alike(24, 0, 1.0)
    assert changes(one, [350], 0.84, wide=frozenset({350}), wide_threshold=0.90) == []


def test_in_gaps_keeps_the_frames_inside_long_word_gaps() -> None:
    words = _words([("one", 10.0, 10.4), ("two", 10.5, 11.3), ("three", 11.7, 12.0)])
    assert in_gaps([45, 120, 135, 150, 175], words, 10.0, 0.3) == frozenset({135, 150})


def _words(spans: list[tuple[str, float, float]]) -> list[Word]:
    return [Word(word=f" {w}", start=a, end=b, probability=0.9) for w, a, b in spans]


def test_the_audio_is_cut_at_the_pause_and_each_word_goes_by_its_middle() -> None:
    words = _words([("one", 10.0, 10.4), ("two", 10.5, 11.3), ("three", 11.6, 12.0),
                    ("four", 12.1, 12.9)])
    spec = SegmentSpec("k", 3, 10.0, 13.0, "one two three four", "en", words=words)
    assert word_gaps(words, 10.0) == [145]  # only the 0.3 s gap is long enough
    got = pieces(spec, [120])  # a pause at 1.2 s: "two" (10.5-11.3) ran into it, its middle not
    assert [(p.start, p.end) for p in got] == [(0.0, 1.2), (1.2, 3.0)]
    seg = CutSegment(7, spec, 48000, np.zeros(0, np.float32))
    after = np.arange(3 * 24000, dtype=np.float32)
    before = np.arange(3 * 16000, dtype=np.float32)
    (s1, a1, b1), (s2, a2, b2) = cut_segment(seg, after, 24000, before, 16000, got)
    assert (s1.spec.text, s2.spec.text) == ("one two", "three four")
    assert (s1.spec.start, s1.spec.end, s2.spec.start, s2.spec.end) == (10.0, 11.2, 11.2, 13.0)
    assert a1.size == round(1.2 * 24000) and a1.size + a2.size == after.size
    assert b1.size + b2.size == before.size
    assert segment_id("k", 3, s2.spec.part) == "k_0003-2"
    assert pieces(spec, [20]) == pieces(spec, [])  # 0.2 s: too short a piece, no cut
    assert pieces(spec, [295]) == pieces(spec, [])  # no word after it: no cut


def test_the_check_counts_a_cut_segments_pieces_as_the_segment() -> None:
    spec = SegmentSpec("k", 0, 0.0, 3.0, "a b", "en")
    plan = Plan(by_key={"k": [spec]})
    p1 = SegmentSpec("k", 0, 0.0, 1.3, "a", "en", part=1)
    p2 = SegmentSpec("k", 0, 1.3, 3.0, "b", "en", part=2)
    check_written(plan, [(p1, 1.3), (p2, 1.7)], [])
    with pytest.raises(SegmentMismatch, match="written twice k_0000-2"):
        check_written(plan, [(p1, 1.3), (p2, 1.7), (p2, 1.7)], [])
    with pytest.raises(SegmentMismatch, match="duration off"):
        check_written(plan, [(p1, 1.3)], [])
