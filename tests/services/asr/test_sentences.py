"""Segments cut at sentence ends to a target length (services/asr/sentences.py), and sentence
punctuation kept across a multi-sentence clip (services/asr/punctuation.py): pure functions,
then the real stage (Whisper base) on espeak-ng sentences."""

from __future__ import annotations

import numpy as np
import pytest

from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.policy import build_segments
from services.asr.sentences import (
    PIECE_MIN_SECONDS,
    at_sentences,
    chosen,
    ends_sentence,
    sentence_ends,
)
from services.asr.settings import AsrSettings
from tests.system_packages import ESPEAK, require

S = AsrSettings()


def _sentence(text: str, start: float, seconds: float) -> list[tuple[str, float, float, float]]:
    """A sentence's words spread evenly over ``seconds`` from ``start``, no gap between them."""
    ws = text.split()
    step = seconds / len(ws)
    return [(" " + w, start + k * step, start + (k + 1) * step, 0.9) for k, w in enumerate(ws)]


def _clip() -> tuple[Clip, ClipText]:
    """28 s: four sentences of 6 s, the second pause a VAD pause inside the clip."""
    words = (_sentence("The first one is here.", 0.5, 6.0)
             + _sentence("Dr. Smith said the second.", 7.0, 6.0)
             + _sentence("Is this the third one?", 14.0, 6.0)
             + _sentence("The fourth ends it all.", 21.5, 6.0))
    clip = Clip(0.3, 27.8, pauses=[(13.1, 13.9)])
    return clip, ClipText("".join(w[0] for w in words).strip(), -0.2, 0.01, words)


def test_a_sentence_ends_in_punctuation_and_a_pause() -> None:
    assert ends_sentence(" here.") and ends_sentence("one?”") and ends_sentence("です。")
    assert not ends_sentence(" here,") and not ends_sentence(" Dr")
    words = [(" Dr.", 0.0, 0.4, 0.9), (" Smith", 0.4, 0.9, 0.9), (" left.", 0.9, 1.3, 0.9),
             (" Then", 1.6, 2.0, 0.9)]
    # "Dr." runs straight on into the next word: no pause, no sentence end
    assert sentence_ends(words) == [2]


def test_sentences_packed_up_to_the_target() -> None:
    _, text = _clip()
    words = text.words or []
    ends = sentence_ends(words)
    assert [words[k][0] for k in ends] == [" here.", " second.", " one?"]
    assert chosen(words, ends, 15.0, 1.0) == [ends[1]]  # 6.5 + 6 s, then 6 + 6 s
    assert chosen(words, ends, 7.0, 1.0) == ends  # each sentence alone
    assert chosen(words, ends, 40.0, 1.0) == []
    # a sentence longer than the target stays whole; nothing shorter than the min is cut off
    assert chosen(words, ends, 3.0, 1.0) == ends
    assert chosen(words, ends, 3.0, 6.5) == [ends[1]]


def test_a_long_clip_is_cut_between_words_keeping_their_punctuation() -> None:
    clip, text = _clip()
    cut = at_sentences([Clip(30.0, 31.5), clip], [ClipText("Hi there.", -0.1, 0.0, None), text],
                       ["en", "en"], set(), 15.0, 1.0)
    assert [t.text for t in cut.texts] == [
        "Hi there.", "The first one is here. Dr. Smith said the second.",
        "Is this the third one? The fourth ends it all."]
    assert cut.languages == ["en", "en", "en"]
    # the cut falls in the VAD pause: the pieces end and start at its edges, as VAD's would
    assert [(c.start, c.end) for c in cut.clips[1:]] == [(0.3, 13.1), (13.9, 27.8)]
    for c, t in zip(cut.clips[1:], cut.texts[1:]):
        assert t.words and all(c.start <= w[1] and w[2] <= c.end for w in t.words)
    # every word is in exactly one piece, in order
    assert [w for t in cut.texts[1:] for w in t.words or ()] == text.words


def test_a_cut_between_words_without_a_vad_pause_is_at_their_gap() -> None:
    clip, text = _clip()
    cut = at_sentences([clip], [text], ["en"], set(), 7.0, 1.0)
    assert len(cut.clips) == 4
    assert cut.clips[0].end == cut.clips[1].start == pytest.approx((6.5 + 7.0) / 2)
    assert all(t.text[-1] in ".?" for t in cut.texts)
    assert all(a.end <= b.start for a, b in zip(cut.clips, cut.clips[1:]))


def test_clips_left_whole() -> None:
    clip, text = _clip()
    for short, target, words in (({0}, 15.0, text.words), (set(), 0.0, text.words),
                                 (set(), 15.0, None)):
        t = ClipText(text.text, text.avg_logprob, text.no_speech_prob, words)
        cut = at_sentences([clip], [t], ["en"], short, target, 1.0)
        assert cut.clips == [clip] and cut.texts == [t] and cut.short == short


def test_build_segments_cuts_and_keeps_the_flags_index_for_index() -> None:
    clip, text = _clip()
    later = Clip(40.0, 50.0)
    segs = build_segments([clip, later], [text, ClipText("Too few.", -0.2, 0.01, [])], short={1},
                          settings=S, languages=["en", "en"])
    assert [x.idx for x in segs.lines] == [0, 1, 2]
    assert [x.kept for x in segs.lines] == [True, True, False]
    assert segs.lines[2].reason is not None and "text_coverage" in segs.lines[2].reason
    assert all(x.end - x.start <= S.asr_segment_target_seconds for x in segs.lines[:2])
    assert segs.lines[0].end <= segs.lines[1].start


def test_sentence_pieces_keep_their_own_minimum_whatever_the_segment_minimum() -> None:
    # a last sentence of 0.7 s: above the default kept-segment minimum (0.5 s), under the
    # shortest piece cutting makes (1 s), so it joins the one before at any segment minimum
    words = (_sentence("The first one is here.", 0.5, 9.0)
             + _sentence("The second comes next.", 10.0, 14.6) + _sentence("Yes.", 25.1, 0.7))
    clip = Clip(0.3, 26.0)
    text = ClipText("".join(w[0] for w in words).strip(), -0.2, 0.01, words)
    assert S.asr_segment_min_seconds < 0.7 < PIECE_MIN_SECONDS == 1.0
    bounds = {m: [(x.start, x.end, x.text) for x in build_segments(
        [clip], [text], set(), AsrSettings(asr_segment_min_seconds=m), languages=["en"]).lines]
        for m in (0.5, 1.0)}
    assert bounds[0.5] == bounds[1.0] and len(bounds[0.5]) == 2
    assert bounds[0.5][1][2].endswith("next. Yes.")
    ends = sentence_ends(words)
    assert ends == [4, 8] and chosen(words, ends, 15.0) == [4]
    assert chosen(words, ends, 15.0, 0.5) == [4, 8]  # what the segment minimum would have cut


# --- the real stage ------------------------------------------------------------------------------
SENTENCES = ["The quick brown fox jumps over the lazy dog.",
             "Yesterday I went to the market to buy some bread.",
             "She said the weather would be nice this week.",
             "Could you tell me where the station is?"]


def _spoken(pause: float) -> np.ndarray:
    from fixtures.speechgen import silence, synth

    parts = [silence(0.5)]
    for s in SENTENCES:
        parts += [synth(s), silence(pause)]
    return np.concatenate(parts)


@pytest.mark.parametrize("pause", [0.6, 2.0])
def test_sentence_punctuation_kept_across_a_multi_sentence_clip(asr_stage, pause: float) -> None:
    """Four sentences in one clip (and one window): Whisper decoding with no previous text wrote
    the whole window without a full stop ("... the lazy dog Yesterday I went ...")."""
    require(ESPEAK)
    from services.text.forms import with_forms

    line = with_forms(asr_stage.transcribe_file("four", _spoken(pause)).line, asr_stage._text)
    kept = [s for s in line.segments if s.kept]
    assert kept
    text = " ".join(s.text for s in kept)
    for word in ("dog.", "bread.", "week."):
        assert word in text, text
    target = asr_stage.settings.asr_segment_target_seconds
    for s in kept:
        assert s.text.rstrip()[-1] in ".?!"
        assert s.end - s.start <= target
        assert s.text_spoken  # each piece its own spoken form
    if pause == 2.0:  # 17 s of speech: cut at a sentence end
        assert len(kept) >= 2
