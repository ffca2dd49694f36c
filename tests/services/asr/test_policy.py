"""Segment policy, quality flags, clip planning and language aggregation: pure functions."""

from __future__ import annotations

import numpy as np
import pytest

from common.settings import Settings
from services.asr.clips import SEPARATOR_SECONDS, Clip, join_spans, pack_windows
from services.asr.langid import aggregate, pick_windows
from services.asr.policy import Phrase, split_clip
from services.asr.quality import flag_segment, has_repeated_ngram

S = Settings()


def test_join_spans_across_short_pauses_only() -> None:
    clips = join_spans([(0, 4), (4.5, 9), (14, 16), (16.5, 50)], max_seconds=30, join_gap=3.0)
    assert [(c.start, c.end) for c in clips] == [(0, 9), (14, 16), (16.5, 50)]
    assert clips[0].pauses == [(4, 4.5)]
    # joining stops at the max: the clip would be 36 s
    assert join_spans([(0, 20), (21, 31)], 30, 3.0)[1].start == 21


def test_pack_windows_and_time_mapping() -> None:
    clips = [Clip(0, 10), Clip(20, 28), Clip(40, 52), Clip(60, 80)]
    ws = pack_windows(clips)
    assert [w.indices for w in ws] == [[0, 1], [2], [3]]  # 10+1+8 <= 30; +1+12 > 30
    w = ws[0]
    assert w.offsets == [0.0, 10 + SEPARATOR_SECONDS]
    assert w.to_file_time(5.0) == (0, 5.0)
    assert w.to_file_time(12.0) == (1, 21.0)
    audio = np.ones(16000 * 90, dtype=np.float32)
    assert w.audio(audio).size == int((10 + SEPARATOR_SECONDS + 8) * 16000)


def test_split_clip_cuts_only_at_pauses() -> None:
    clip = Clip(10.0, 30.0, pauses=[(14.0, 15.0), (22.0, 22.6)])
    phrases = [Phrase(10.0, 14.1, "one two three."), Phrase(14.9, 18.0, "four five."),
               Phrase(18.0, 22.2, "six seven."), Phrase(22.5, 30.0, "eight nine ten.")]
    segs = split_clip(clip, phrases, min_seconds=1.0, max_seconds=30.0, language="en")
    assert segs == [(10.0, 14.0, "one two three."), (15.0, 22.0, "four five. six seven."),
                    (22.6, 30.0, "eight nine ten.")]


def test_split_clip_merges_short_pieces_and_joins_japanese_without_spaces() -> None:
    clip = Clip(0.0, 6.0, pauses=[(0.5, 1.0)])
    segs = split_clip(clip, [Phrase(0, 0.5, "あ"), Phrase(1.0, 6.0, "りがとう")],
                      min_seconds=1.0, max_seconds=30.0, language="ja")
    assert segs == [(0.0, 6.0, "ありがとう")]


def test_split_clip_without_text_is_one_empty_segment() -> None:
    assert split_clip(Clip(1, 5), [Phrase(1, 5, "  ")], 1.0, 30.0, "en") == [(1, 5, "")]


@pytest.mark.parametrize("text,loop", [
    ("the cat sat on the mat and looked out of the window", False),
    ("no no no, I said it was fine", False),
    ("thank you thank you thank you thank you thank you", True),
    ("I I I I I I I I I I", True),
    ("ありがとうありがとうありがとうありがとうありがとう", True),
    ("きょうはとてもいいてんきですね", False),
])
def test_repeated_ngrams(text: str, loop: bool) -> None:
    assert has_repeated_ngram(text) is loop


def test_flags() -> None:
    ok = {"avg_logprob": -0.2, "no_speech_prob": 0.01, "compression_ratio": 1.2, "settings": S}
    assert flag_segment("hello there my friend", 0, 3, **ok) == []
    assert flag_segment("", 0, 3, **ok) == ["empty_text"]
    assert flag_segment("hi", 0, 0.5, **ok) == ["too_short"]
    assert flag_segment("hi", 0, 31, **ok) == ["too_long"]
    assert flag_segment("hm", 0, 3, avg_logprob=-1.5, no_speech_prob=0.9, compression_ratio=1,
                        settings=S) == ["non_speech"]
    assert flag_segment("hm", 0, 3, avg_logprob=-1.5, no_speech_prob=0.1, compression_ratio=1,
                        settings=S) == ["low_confidence"]
    assert flag_segment("la la", 0, 3, avg_logprob=-0.1, no_speech_prob=0.1,
                        compression_ratio=3.0, settings=S) == ["repetition"]


def test_language_windows_and_aggregate() -> None:
    assert pick_windows(2, 3) == [0, 1]
    assert pick_windows(10, 3) == [1, 5, 8]
    g = aggregate([[("<|en|>", 0.9), ("<|de|>", 0.1)], [("<|ja|>", 0.6), ("<|en|>", 0.4)]],
                  [20.0, 10.0])
    assert g.language == "en" and g.probability == pytest.approx((18 + 4) / 30)
    assert aggregate([], []).language is None
