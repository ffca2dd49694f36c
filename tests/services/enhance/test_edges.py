"""A piece's edges trimmed where two voices sound at once (services/enhance/edges.py): to word
edges, the words going with the stretch; a piece with no firing frame near an edge unchanged;
the cut segment's text, words, times and audio agreeing; the writer doing it on the input audio
and the output check counting what it trimmed."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from common.shards.audio import resample
from services.enhance.chain import OUT_RATE, Item
from services.enhance.cuts import DEFAULT_CUTS
from services.enhance.edges import FRAME_SPAN, firing, overlaps, runs, trim, trim_all
from services.enhance.quality.overlap import PitchTest, overlap
from services.enhance.quality.overlap import frames as overlap_frames
from services.enhance.quality.speaker import Windows
from services.enhance.recut import Recut
from services.enhance.segments import CutSegment, Plan, SegmentSpec
from services.enhance.tally import QualityTally
from services.enhance.turns import Piece, cut_segment, pieces
from services.enhance.verify import SegmentMismatch, check_written
from services.records import Word

SR = 16000
OFFSET = 10.0  # the segment's start in its member: word times are the member's


def _words(spans: list[tuple[str, float, float]]) -> list[Word]:
    return [Word(word=f" {w}", start=OFFSET + a, end=OFFSET + b, probability=0.9)
            for w, a, b in spans]


WORDS = _words([("one", 0.0, 0.3), ("two", 0.4, 1.4), ("three", 1.5, 2.5), ("four", 2.6, 2.9)])
PIECE = Piece(0.0, 3.0, WORDS)


def test_a_start_that_overlaps_is_trimmed_to_the_next_words_edge() -> None:
    got = trim(PIECE, np.array([0.1, 0.2]), OFFSET)  # "one" (to 0.3) overlaps frame 0.20-0.24
    assert got is not None and got.words == WORDS[1:]
    assert got.start == 0.35  # the middle of the gap between "one" and "two"
    assert got.end == 3.0
    late = trim(PIECE, np.array([0.36]), OFFSET)  # fires into the gap: never inside a frame
    assert late is not None and late.start == round(0.36 + FRAME_SPAN, 3)
    assert late.words == WORDS[1:]


def test_an_end_that_overlaps_is_trimmed_to_the_last_clear_words_edge() -> None:
    got = trim(PIECE, np.array([2.7]), OFFSET)  # in "four"
    assert got is not None and got.words == WORDS[:3]
    assert (got.start, got.end) == (0.0, 2.55)
    both = trim(PIECE, np.array([0.0, 2.55]), OFFSET)  # in "one", in the gap before "four"
    assert both is not None and both.words == WORDS[1:3]  # "four" ends after the frame
    assert (both.start, both.end) == (0.35, 2.55)


def test_no_firing_near_an_edge_leaves_the_piece_as_it_is() -> None:
    assert trim(PIECE, np.array([]), OFFSET) is PIECE
    assert trim(PIECE, np.array([1.0, 1.9]), OFFSET) is PIECE  # deep inside: not an edge
    assert trim(PIECE, np.array([1.9]), OFFSET, window=1.5) is not PIECE  # a wider edge


def test_a_piece_with_nothing_left_is_dropped_where_a_run_fires_in_it() -> None:
    short = Piece(0.0, 1.4, WORDS[:2])
    fires = np.array([0.2, 1.3, 1.32, 1.38])  # in "one"; a run in "two"
    assert trim(short, fires, OFFSET, window=1.0) is None
    assert trim_all([short, Piece(1.45, 3.0, WORDS[2:])], fires, OFFSET,
                    window=1.0) == [Piece(1.45, 3.0, WORDS[2:])]


def test_isolated_frames_trim_but_never_take_a_whole_piece() -> None:
    short = Piece(0.0, 1.4, WORDS[:2])
    fires = np.array([0.2, 1.3])  # one frame in "one", one in "two": no run
    assert trim(short, fires, OFFSET, window=1.0) is None
    assert trim_all([short], fires, OFFSET, window=1.0) == [short]  # kept whole
    assert trim_all([PIECE], np.array([0.1]), OFFSET) == [Piece(0.35, 3.0, WORDS[1:])]


def test_runs_are_frames_close_together() -> None:
    fires = np.array([0.5, 1.0, 1.02, 1.08, 2.0, 2.3, 2.32])
    assert [r.tolist() for r in runs(fires)] == [[1.0, 1.02, 1.08], [2.3, 2.32]]
    assert overlaps(fires) == pytest.approx([(1.0 + 1.08 + FRAME_SPAN) / 2,
                                             (2.3 + 2.32 + FRAME_SPAN) / 2])
    assert [r.tolist() for r in runs(fires, min_frames=3)] == [[1.0, 1.02, 1.08]]
    assert runs(np.array([])) == [] and overlaps(np.array([0.5])) == []


def _segment() -> CutSegment:
    spec = SegmentSpec("k", 3, OFFSET, OFFSET + 3.0, "one two three four", "en", words=WORDS)
    return CutSegment(7, spec, 48000, np.zeros(0, np.float32))


def test_the_trimmed_pieces_text_words_times_and_audio_agree() -> None:
    seg = _segment()
    parts = trim_all(pieces(seg.spec, [145]), np.array([1.46, 2.7]), OFFSET)
    assert [(p.start, p.end) for p in parts] == [(0.0, 1.45), (1.5, 2.55)]
    after = np.arange(3 * OUT_RATE, dtype=np.float32)
    before = np.arange(3 * SR, dtype=np.float32)
    cut = cut_segment(seg, after, OUT_RATE, before, SR, parts)
    assert [c.spec.text for c, _, _ in cut] == ["one two", "three"]
    for c, a, b in cut:
        assert c.spec.text == "".join(w.word for w in c.spec.words or []).strip()
        seconds = c.spec.end - c.spec.start
        assert abs(a.size / OUT_RATE - seconds) < 1e-3 and abs(b.size / SR - seconds) < 1e-3
        assert all(c.spec.start <= (w.start + w.end) / 2 <= c.spec.end
                   for w in c.spec.words or [])
    assert cut[1][1][0] == round(1.5 * OUT_RATE)  # the audio from the piece's own start
    assert [c.spec.part for c, _, _ in cut] == [1, 2]
    (one, _, _), = cut_segment(seg, after, OUT_RATE, before, SR, parts[1:])
    assert one.spec.part is None  # one piece left: the segment keeps its name


def test_the_check_counts_what_was_trimmed() -> None:
    spec = SegmentSpec("k", 0, 0.0, 3.0, "a b", "en")
    plan = Plan(by_key={"k": [spec]})
    p1 = SegmentSpec("k", 0, 0.0, 1.3, "a", "en", part=1)
    p2 = SegmentSpec("k", 0, 1.5, 2.9, "b", "en", part=2)
    check_written(plan, [(p1, 1.3), (p2, 1.4)], [], {"k_0000": 0.3})
    with pytest.raises(SegmentMismatch, match="duration off"):
        check_written(plan, [(p1, 1.3), (p2, 1.4)], [])
    check_written(plan, [], [], {"k_0000": 3.0})  # nothing left of it, all said
    with pytest.raises(SegmentMismatch, match="missing"):
        check_written(plan, [], [], {})


def _voice(f0: float, seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * SR)) / SR
    return sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 8)).astype(np.float32)


def test_firing_finds_two_periodicities_and_not_one() -> None:
    assert firing(_voice(140, 2.0), SR).size == 0
    two = firing(_voice(140, 2.0) + _voice(217, 2.0), SR)
    assert two.size > 50 and two.max() < 2.0


def test_the_recut_trims_where_the_input_holds_two_voices() -> None:
    """One voice throughout (no change), a second one over "one" (its first 0.3 s)."""
    before = _voice(140, 3.0)
    before[:round(0.3 * SR)] += _voice(217, 0.3)
    one_voice = Windows(np.ones((9, 4), np.float32), np.arange(9) * 25, np.ones(9),
                        np.ones(300), 100)
    annotator = SimpleNamespace(
        device="cpu", speaker=SimpleNamespace(windows=lambda clips: [one_voice] * len(clips)),
        overlap=PitchTest(), label_model=None)
    w = Recut(annotator, DEFAULT_CUTS, SR, QualityTally())  # type: ignore[arg-type]
    after = np.arange(3 * OUT_RATE, dtype=np.float32)
    (got,) = w.run([Item(_segment(), after, before)])
    seg, audio, inp, frames = got.seg, got.audio, got.before, got.frames
    assert inp is not None
    assert seg.spec.words == WORDS[1:] and seg.spec.text == "two three four"
    assert seg.spec.part is None and seg.spec.end == OFFSET + 3.0
    assert 0.3 <= seg.spec.start - OFFSET <= 0.4
    assert audio.size / OUT_RATE == pytest.approx(OFFSET + 3.0 - seg.spec.start, abs=1e-3)
    assert inp.size == audio.size * SR // OUT_RATE
    assert w.trimmed == {"k_0003": pytest.approx(seg.spec.start - OFFSET)}
    assert (w.tally.overlap_trimmed, w.tally.overlap_trimmed_words) == (1, 1)
    plain = Recut(annotator, DEFAULT_CUTS, SR, QualityTally())  # type: ignore[arg-type]
    alone = _voice(140, 3.0)
    (same,) = plain.run([Item(_segment(), after, alone)])
    whole = same.frames
    assert same.seg.spec == _segment().spec and plain.trimmed == {}  # one voice: untouched
    # the overlap frames go with each item: the trimmed piece's are the segment's from its
    # start on; the untouched segment's are its own, the annotation's value exactly
    assert frames is not None and whole is not None
    seg_frames = overlap_frames(resample(before, SR, 8000))
    own = (inp.size // 2 - 520) // 160 + 1  # the piece's own frames, had it been scanned
    assert own - 1 <= frames.power.size <= own
    assert np.array_equal(frames.power, seg_frames.power[-frames.power.size:])
    assert np.array_equal(frames.fire, seg_frames.fire[-frames.power.size:])
    assert frames.share() == pytest.approx(overlap(inp), abs=0.05)
    assert whole.share() == overlap(alone) == 0.0
