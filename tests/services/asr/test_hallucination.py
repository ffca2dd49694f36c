"""Whisper's stock phrases ("thank you for watching", 「ご視聴ありがとうございました」, credits,
"♪") are flagged ``hallucination`` unless the segment's audio says them; real speech saying
them through the real model stays kept."""

from __future__ import annotations

import numpy as np
import pytest

from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.hallucination import hallucinated, known_phrase, normalise
from services.asr.policy import build_segments
from services.asr.quality import flag_segment
from services.asr.settings import AsrSettings
from tests.system_packages import ESPEAK, needs

S = AsrSettings()


@pytest.mark.parametrize("text", [
    " Thank you for watching!", "Thanks for watching. Please subscribe.", " you",
    "ご視聴ありがとうございました", "ご視聴ありがとうございました。チャンネル登録お願いします。",
    "♪", "[Music]", "（拍手）", "Subtitles by the Amara.org community", "字幕:山田",
    # the punctuation prompt written back over music
    "I'm fine.", "Hello. How are you? I'm fine, thanks.", "お元気ですか？"])
def test_known_phrases(text: str) -> None:
    assert known_phrase(text)


@pytest.mark.parametrize("text", [
    "Thank you for the food.", "I said thank you to him.", "You know what I mean?",
    "私の名前は田中です。", "ありがとうございます、田中さん。", "♪ la la la ♪", ""])
def test_speech_that_is_not_a_stock_phrase(text: str) -> None:
    assert not known_phrase(text)


def test_normalise() -> None:
    assert normalise(" Don't  forget, to LIKE & subscribe!") == "dont forget to like subscribe"
    assert normalise("ご視聴 ありがとう ございました。") == "ご視聴ありがとうございました"


def test_supported_only_by_its_audio() -> None:
    # measured: espeak saying the phrases (kept), Whisper base over music and noise (not)
    assert not hallucinated(" Thank you.", 1.16, [0.84, 0.83], -0.65, 0.12)
    assert not hallucinated("ご視聴ありがとうございました", 1.66, [0.67], -0.86, 0.06)
    assert hallucinated(" Thank you.", 1.4, [0.5, 0.49, 0.47], -0.86, 0.71)  # over music
    assert hallucinated(" Thank you.", 1.4, [0.30, 0.45], -0.4, 0.1)  # unsure of its words
    assert hallucinated(" you", 1.5, [0.9], -0.2, 0.05)  # 3 letters for 1.5 s: not that
    assert hallucinated("♪", 2.0, [0.99], -0.1, 0.0)  # a tag is never speech
    assert hallucinated("Subtitles by Amara.org", 2.0, [0.99] * 3, -0.1, 0.0)
    assert not hallucinated("Thank you for the food.", 1.0, [0.1], -3.0, 0.9)  # not a phrase
    # without word timestamps: the window's confidence decides
    assert not hallucinated(" Thank you very much.", 1.4, None, -0.5, 0.05)
    assert hallucinated(" Thank you very much.", 1.4, None, -1.3, 0.05)


def test_flag_and_build_segments_use_the_words() -> None:
    assert flag_segment(" Thank you for watching.", 0.0, 1.6, -0.4, 0.05, 1.0, S,
                        word_probabilities=[0.2, 0.3, 0.4, 0.3]) == ["hallucination"]
    assert flag_segment(" Thank you for watching.", 0.0, 1.6, -0.4, 0.05, 1.0, S,
                        word_probabilities=[0.9, 0.95, 0.9, 0.92]) == []
    words = [(" Thank", 1.0, 1.4, 0.31), (" you", 1.4, 1.7, 0.2), (" for", 1.7, 1.9, 0.4),
             (" watching.", 1.9, 2.5, 0.35)]
    segs = build_segments([Clip(0.8, 2.7), Clip(4.0, 6.0)],
                          [ClipText(" Thank you for watching.", -0.3, 0.02, words),
                           ClipText(" The dog ran home.", -0.3, 0.02,
                                    [(" The", 4.1, 4.3, 0.9), (" dog", 4.3, 4.7, 0.9),
                                     (" ran", 4.7, 5.1, 0.9), (" home.", 5.1, 5.8, 0.9)])],
                          set(), S)
    assert [s.reason for s in segs.lines] == ["hallucination", None]


@needs(ESPEAK)
def test_real_speech_saying_the_phrases_is_kept(asr_stage) -> None:
    """A show's last words: sentences, a long pause, then the phrase (a clip of its own)."""
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import concat, silence, synth

    body = concat([synth(x) for x in EN_SENTENCES[3:6]], pause=0.6)
    for voice, text in (("en-us", "Thank you for watching."), ("en-gb+f3", "Thank you."),
                        ("en-us", "Thanks for watching, see you next time."),
                        ("en-us", "Hello, how are you?"), ("en-gb+f3", "I'm fine, thanks.")):
        audio = np.concatenate([silence(0.5), body, silence(4.0), synth(text, voice=voice),
                                silence(1.0)])
        line = asr_stage.transcribe_file(f"said-{voice}", audio).line
        said = [s for s in line.segments if known_phrase(s.text)]
        assert said and all("hallucination" not in (s.reason or "") for s in said), \
            [(s.text, s.reason) for s in line.segments]
