"""A segment's pieces (services/enhance/cuts.py): a run of overlap frames with no pause or word
gap at the turn is a cut, the word straddling it trimmed from both pieces; a cut in a wide word
gap needs more alike voices to merge in a segment already cut; each setting off gives what it
did without it."""

from __future__ import annotations

import numpy as np

from services.enhance.cuts import CutSettings, segment_pieces
from services.enhance.quality.speaker import Windows
from services.enhance.segments import SegmentSpec
from services.records import Word


def _windows(n_a: int, n_b: int, cos: float) -> Windows:
    """1 s windows every 0.25 s, voice a then voice b, ``cos`` alike."""
    a = np.eye(8)[0]
    b = cos * a + np.sqrt(1 - cos**2) * np.eye(8)[1]
    n = n_a + n_b
    emb = np.array([a] * n_a + [b] * n_b, np.float32)
    return Windows(emb, np.arange(n) * 25, np.ones(n), np.ones(25 * n + 75), 100)


def _spec(spans: list[tuple[str, float, float]]) -> SegmentSpec:
    words = [Word(word=f" {w}", start=a, end=b, probability=0.9) for w, a, b in spans]
    return SegmentSpec("k", 0, 0.0, 6.75, " ".join(w for w, _, _ in spans), "en", words=words)


# no gap anywhere; "three" straddles the turn at 3.0 s (voice b's window centres from 3.5 s)
RUN_ON = _spec([("one", 0.0, 1.0), ("two", 1.0, 2.0), ("three", 2.0, 3.2),
                ("four", 3.2, 4.5), ("five", 4.5, 6.5)])
FIRES = np.array([3.0, 3.02, 3.04])  # a run: both voices at once


def test_a_turn_with_no_gap_is_cut_at_the_overlap_and_the_straddling_word_dropped() -> None:
    w = _windows(12, 12, 0.0)
    parts, kept = segment_pieces(RUN_ON, w, FIRES, CutSettings())
    assert [[x.word for x in p.words] for p in parts] == [[" one", " two", " three"],
                                                          [" four", " five"]]
    assert [[x.word for x in p.words] for p in kept] == [[" one", " two"], [" four", " five"]]
    assert kept[0].end == 2.0 and kept[1].start > 3.04  # the overlapped stretch gone
    off_parts, off_kept = segment_pieces(RUN_ON, w, FIRES, CutSettings(overlap_cuts=False))
    assert len(off_parts) == 1 and off_kept == off_parts  # deep inside: nothing to trim
    none_parts, _ = segment_pieces(RUN_ON, w, None, CutSettings())
    assert len(none_parts) == 1  # no frames: no run to cut at


def test_one_voice_is_not_cut_at_an_overlap_run() -> None:
    parts, _ = segment_pieces(RUN_ON, _windows(24, 0, 1.0), FIRES, CutSettings())
    assert len(parts) == 1


def test_a_wide_gap_between_close_voices_is_cut_where_the_segment_holds_two() -> None:
    spec = _spec([("one", 0.0, 1.0), ("two", 1.0, 3.3), ("three", 3.7, 4.9),
                  ("four", 5.1, 6.5)])  # 0.4 s before "three" (a wide gap), 0.2 s before "four"
    a, third = np.eye(8)[0], np.eye(8)[2]
    b = 0.87 * a + np.sqrt(1 - 0.87**2) * np.eye(8)[1]  # b over the plain threshold (0.84) to a,
    emb = np.array([a] * 12 + [b] * 6 + [third] * 6, np.float32)  # under the gap's (0.90)
    w = Windows(emb, np.arange(24) * 25, np.ones(24), np.ones(675), 100)
    parts, _ = segment_pieces(spec, w, None, CutSettings())
    assert [len(p.words) for p in parts] == [2, 1, 1]
    plain, _ = segment_pieces(spec, w, None, CutSettings(gap_threshold=None))
    assert [len(p.words) for p in plain] == [3, 1]
    two, _ = segment_pieces(spec, _windows(12, 12, 0.87), None, CutSettings())
    assert len(two) == 1  # no change stands at the plain threshold: the gap alone cuts nothing
