"""Segment policy, quality flags, text coverage, clip planning and language aggregation: pure
functions."""

from __future__ import annotations

import numpy as np
import pytest

from services.asr.batched import ClipText
from services.asr.clips import Clip, join_spans
from services.asr.coverage import expected_rate, floor_rate, is_short, recover, units
from services.asr.langid import aggregate, first_look, pick_windows, settled
from services.asr.policy import build_segments
from services.asr.quality import flag_segment, has_repeated_ngram
from services.asr.settings import AsrSettings

S = AsrSettings()


def test_join_spans_across_short_pauses_only() -> None:
    clips = join_spans([(0, 4), (4.5, 9), (14, 16), (16.5, 50)], max_seconds=30, join_gap=3.0)
    assert [(c.start, c.end) for c in clips] == [(0, 9), (14, 16), (16.5, 50)]
    assert clips[0].pauses == [(4, 4.5)]
    # joining stops at the max: the clip would be 36 s
    assert join_spans([(0, 20), (21, 31)], 30, 3.0)[1].start == 21


def test_clip_parts_are_its_speech_between_pauses() -> None:
    clip = Clip(10.0, 30.0, pauses=[(14.0, 15.0), (22.0, 22.6)])
    assert [(p.start, p.end) for p in clip.parts()] == [(10, 14), (15, 22), (22.6, 30)]
    assert clip.speech_seconds == pytest.approx(20 - 1.6)
    assert [(p.start, p.end) for p in Clip(1, 5).parts()] == [(1, 5)]


def _texts(*texts: str) -> list[ClipText]:
    return [ClipText(t, -0.2, 0.01) for t in texts]


def test_build_segments_one_per_clip_with_flags() -> None:
    clips = [Clip(0.0, 10.0), Clip(12.0, 14.0), Clip(15.0, 15.5), Clip(20.0, 29.9)]
    texts = _texts("one two three four five six seven eight nine ten.", "", "hi.",
                   "the last words are cut off.")
    segs = build_segments(clips, texts, short={0}, settings=S, cut_at=30.0)
    assert [(x.start, x.end, x.text) for x in segs.lines] == [
        (0.0, 10.0, texts[0].text), (12.0, 14.0, ""), (15.0, 15.5, "hi."),
        (20.0, 29.9, texts[3].text)]
    assert [x.reason for x in segs.lines] == ["text_coverage", "empty_text", "too_short",
                                               "truncated"]
    assert segs.kept == 0 and segs.kept_seconds == 0.0
    # not truncated: the last segment is kept
    segs = build_segments(clips, texts, short=set(), settings=S)
    assert segs.kept == 2 and segs.kept_seconds == pytest.approx(10.0 + 9.9)


def test_text_units_and_expected_rate() -> None:
    assert units("Hello, world!") == 10 and units("今日は、いい天気。") == 7
    assert units("ＡＢＣ １２") == 5  # NFKC
    # the file's median rate, from clips of some length, never under the language floor
    assert expected_rate([(150, 10.0), (130, 10.0), (10, 1.0)], "en") == pytest.approx(14.0)
    assert expected_rate([(20, 10.0)], "en") == floor_rate("en")
    assert floor_rate("ja") < floor_rate("en")
    assert not is_short("a b", 1.0, 15.0)  # within the slack: a word in a one-second clip
    assert is_short("a" * 60, 13.0, 15.0) and not is_short("a" * 100, 13.0, 15.0)


def test_recover_decodes_short_clips_in_parts_and_flags_what_stays_short() -> None:
    full = "x" * 140
    clips = [Clip(0, 10), Clip(11, 21), Clip(22, 32, pauses=[(26, 27)]), Clip(33, 43),
             Clip(44, 54)]
    texts = _texts(full, full, "x" * 20, "x" * 10, full)
    calls: list[tuple[list[tuple[float, float]], int]] = []

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        calls.append(([(c.start, c.end) for c in batch], beam))
        # the parts of clip 2 carry their text; clip 3 (no pause) stays short
        return [ClipText("y" * 60 if c.start in (22, 27) else "z" * 12, -0.3, 0.02)
                for c in batch]

    cov = recover(clips, texts, "en", decode)
    assert calls == [([(22, 26), (27, 32), (33, 43)], 5)]  # one batch, beam search
    assert texts[2].text == "y" * 60 + " " + "y" * 60 and texts[3].text == "z" * 12
    assert cov.retried == 2 and cov.short == {3} and cov.rate == pytest.approx(14.0)


def test_recover_does_nothing_when_text_covers_the_speech() -> None:
    texts = _texts("x" * 140, "x" * 130)
    cov = recover([Clip(0, 10), Clip(11, 21)], texts, "en", lambda b, k: 1 / 0)
    assert cov.retried == 0 and cov.short == set()


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


def test_window_audio_caps_long_pauses_with_their_own_edges() -> None:
    from services.asr.windows import MAX_PAUSE_SECONDS, alone

    sr = 16000
    audio = np.arange(sr * 20, dtype=np.float32)
    clip = Clip(1.0, 10.0, pauses=[(3.0, 7.0), (8.0, 8.2)])
    (window,) = alone([clip])
    w = window.audio(audio)
    cap = int(MAX_PAUSE_SECONDS * sr) // 2 * 2
    assert w.size == 2 * sr + cap + sr + int(0.2 * sr) + int(1.8 * sr)
    assert w[0] == sr and w[-1] == 10 * sr - 1  # starts and ends where the clip does
    assert w[2 * sr] == 3 * sr and w[2 * sr + cap - 1] == 7 * sr - 1  # the pause's two edges
    assert np.array_equal(alone([Clip(2.0, 3.0)])[0].audio(audio), audio[2 * sr:3 * sr])


def test_first_look_settles_only_when_sure_of_no_kept_language() -> None:
    assert first_look([1, 5, 8]) == [5] and first_look([0, 1]) == [1] and first_look([]) == []
    kept = ["ja", "en"]

    def guess(*pairs: tuple[str, float]):
        return aggregate([[(f"<|{k}|>", p) for k, p in pairs]], [1.0])

    assert settled(guess(("es", 0.9), ("en", 0.05)), kept, 0.8)
    # unsure which language, sure it is none kept (whisper base on German): settled
    assert settled(guess(("de", 0.35), ("cy", 0.14), ("lv", 0.09), ("nn", 0.08), ("en", 0.05),
                         ("nl", 0.29)), kept, 0.8)
    assert not settled(guess(("es", 0.6), ("en", 0.3)), kept, 0.8)  # close: every window
    assert not settled(guess(("de", 0.47), ("en", 0.12), ("yi", 0.11), ("ja", 0.1)), kept, 0.8)
    assert not settled(guess(("en", 0.99)), kept, 0.8)  # kept: the others are free
    assert not settled(guess(("es", 1.0)), kept, 1.01)  # above 1: always every window
    assert not settled(aggregate([], []), kept, 0.8)
