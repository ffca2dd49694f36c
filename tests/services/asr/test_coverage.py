"""The coverage retry when a part of a clip loops (services/asr/coverage.py)."""

from __future__ import annotations

import numpy as np

from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.coverage import NO_REPEAT_NGRAM, RETRY_BEAM, recover, units
from services.asr.quality import is_loop

SENTENCE = "彼女は英語がとても上手です。"


def _looped(text: str) -> bool:
    return is_loop(text, 2.4)


def _clip_with_a_looping_part() -> tuple[list[Clip], list[ClipText]]:
    # a 14 s clip of four sentences whose window text looped after the first
    clip = Clip(0.0, 14.0, pauses=[(3.0, 3.5), (7.0, 7.5), (10.5, 11.0)])
    texts = [ClipText(SENTENCE + "ホウ" * 20, -0.5, 0.02)]
    return [clip], texts


def test_a_looping_part_is_decoded_again_without_repeats_and_the_clip_keeps_every_part() -> None:
    clips, texts = _clip_with_a_looping_part()
    calls: list[tuple[list[float], int, int]] = []

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        calls.append(([c.start for c in batch], beam, no_repeat))
        # the part at 3.5 s loops unless repeats are suppressed
        odd = "カノジョハエイゴガウウ" if no_repeat else "カノジョハエイゴガ" + "ウ" * 30
        return [ClipText(odd if c.start == 3.5 else SENTENCE, -0.4, 0.02) for c in batch]

    cov = recover(clips, texts, "ja", decode, _looped)
    assert calls == [([0.0, 3.5, 7.5, 11.0], RETRY_BEAM, 0), ([3.5], RETRY_BEAM, NO_REPEAT_NGRAM)]
    assert texts[0].text == SENTENCE + "カノジョハエイゴガウウ" + SENTENCE * 2
    assert not _looped(texts[0].text) and cov.retried == 1 and cov.short == set()


def test_a_part_that_loops_even_without_repeats_leaves_the_clip_as_it_was() -> None:
    clips, texts = _clip_with_a_looping_part()
    was = texts[0].text

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        return [ClipText("ウ" * 30 if c.start == 3.5 else SENTENCE, -0.4, 0.02) for c in batch]

    cov = recover(clips, texts, "ja", decode, _looped)
    # never a text that lacks a part's speech: the looped text stays, flagged repetition
    assert texts[0].text == was and cov.retried == 1


def _words(spans: list[tuple[float, float]], word: str = "語") -> list[tuple[str, float, float,
                                                                               float]]:
    return [(word, a, b, 0.9) for a, b in spans]


def test_uncovered_finds_a_skipped_last_sentence_and_nothing_where_words_are() -> None:
    from services.asr.coverage import UNCOVERED_SECONDS, uncovered

    clip = Clip(0.0, 12.0, pauses=[(9.0, 9.5)])
    # words over 0-8.8 s, none over the last part (9.5-12.0 s): a dropped sentence
    words = _words([(t, t + 0.4) for t in np.arange(0.1, 8.8, 0.5)])
    assert [(g.start, g.end) for g in uncovered(clip, words)] == [(9.5, 12.0)]
    assert uncovered(clip, words + _words([(9.6, 11.9)])) == []
    # a gap shorter than UNCOVERED_SECONDS is a slow word, not a skipped sentence
    short = Clip(0.0, 9.0 + UNCOVERED_SECONDS - 0.1)
    assert uncovered(short, _words([(0.1, 9.0)])) == []
    assert uncovered(clip, None) == [] and uncovered(clip, []) == []


def test_skipped_sentences_with_only_pauses_between_them_are_one_stretch() -> None:
    """Decoded part by part (2-3 s each), fast Japanese came back as kana babble where the run
    of them decoded at once was read: stretches with no word between them go as one clip
    with its pauses; a word between two stretches keeps them apart."""
    from services.asr.coverage import uncovered

    clip = Clip(0.0, 20.0, pauses=[(5.0, 5.5), (9.0, 9.6), (14.0, 14.4)])
    first = _words([(t, t + 0.4) for t in np.arange(0.1, 4.8, 0.5)])
    got = uncovered(clip, first)
    assert [(g.start, g.end, g.pauses) for g in got] == [
        (5.5, 20.0, [(9.0, 9.6), (14.0, 14.4)])]
    assert got[0].speech_seconds == 14.5 - 0.6 - 0.4
    # a word at 11 s: the stretches before and after it are two (9.6-10.7 s is too short to
    # be one)
    got = uncovered(clip, first + _words([(11.0, 11.4)]))
    assert [(round(g.start, 6), g.end, g.pauses) for g in got] == [
        (5.5, 9.0, []), (11.7, 20.0, [(14.0, 14.4)])]


def test_a_skipped_sentence_is_decoded_alone_and_put_among_the_words() -> None:
    """Only the stretch no word covers is decoded; the clip's own text and words stay, the new
    words are placed by time and the text is rebuilt from them."""
    clip = Clip(0.0, 12.0, pauses=[(5.0, 5.5)])
    # enough text for the clip's speech (the rate check passes): only the gap is missing
    kana = iter("かのじょはえいごがとてもじょうずですきょうはいいてんき")
    old = [(next(kana), t, t + 0.2, 0.9) for t in
           [*np.arange(0.2, 4.8, 0.25), *np.arange(10.0, 11.8, 0.25)]]
    text = "".join(w[0] for w in old)
    texts = [ClipText(text, -0.3, 0.01, old)]
    asked: list[tuple[float, float]] = []

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        asked.extend((c.start, c.end) for c in batch)
        return [ClipText("い", -0.2, 0.01, [("い", c.start + 0.1, c.end - 0.1, 0.8)])
                for c in batch]

    cov = recover([clip], texts, "ja", decode, _looped)
    assert asked == [(5.5, 9.7)]
    want = text[:19] + "い" + text[19:]  # between the words before 5 s and after 10 s
    assert texts[0].text == want and "".join(w[0] for w in texts[0].words or []) == want
    assert cov.retried == 1 and cov.short == set()


def test_japanese_units_are_the_morae_of_the_reading_however_it_is_written() -> None:
    # カノジョワエイゴガトテモジョーズデス: 16 morae, 13 characters as written
    assert units(SENTENCE) == 13 and units(SENTENCE, "ja") == 16
    assert units("かのじょはえいごがとてもじょうずです", "ja") == 16
    assert units("the cat", "en") == units("the cat") == 6


def _short_clip() -> tuple[list[Clip], list[ClipText]]:
    # 14 s of speech holding one sentence (16 morae): short at the unspaced floor, so retried
    return [Clip(0.0, 14.0, pauses=[(7.0, 7.5)])], [ClipText(SENTENCE, -0.39, 0.02)]


def test_a_retry_of_more_kana_but_fewer_morae_does_not_replace_the_kanji_text() -> None:
    """Misheard speech comes back as kana: more characters than the right kanji (14 > 13),
    fewer morae (12 < 16)."""
    clips, texts = _short_clip()

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        return [ClipText("カノジョハエイゴガトテモジョ" if c.start == 0.0 else "", -0.7, 0.02)
                for c in batch]

    recover(clips, texts, "ja", decode, _looped)
    assert texts[0].text == SENTENCE and texts[0].avg_logprob == -0.39


def test_a_retry_that_says_more_replaces_the_text() -> None:
    clips, texts = _short_clip()
    second = "今日はいい天気ですね。"

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        return [ClipText(SENTENCE if c.start == 0.0 else second, -0.3, 0.02) for c in batch]

    cov = recover(clips, texts, "ja", decode, _looped)
    assert texts[0].text == SENTENCE + second and cov.retried == 1 and cov.short == set()


def _stopped_early() -> tuple[list[Clip], list[ClipText]]:
    # a 20 s clip whose window text stopped after its first sentence (words over 0-4.8 s)
    clip = Clip(0.0, 20.0, pauses=[(5.0, 5.5), (10.0, 10.5), (15.0, 15.5)])
    said = iter(["the", "cat", "sat", "on", "a", "mat", "by", "the", "red", "door"])
    first = [(f" {next(said)}", t, t + 0.4, 0.9) for t in np.arange(0.1, 4.8, 0.5)]
    return [clip], [ClipText("".join(w[0] for w in first).strip(), -0.4, 0.02, first)]


def test_a_short_clip_keeps_its_words_and_has_the_rest_decoded_as_one_stretch() -> None:
    """The first sentences stay as first decoded; the speech after them is decoded once, as
    one clip with its pauses, not part by part (whose babble replaced the right text)."""
    clips, texts = _stopped_early()
    kept = texts[0].text
    asked: list[tuple[float, float, int]] = []

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        asked.extend((c.start, c.end, len(c.pauses)) for c in batch)
        return [ClipText("x", -0.5, 0.02, [(f" word{k}", t, t + 0.4, 0.8) for k, t in
                                           enumerate(np.arange(c.start + 0.1, c.end, 0.5))])
                for c in batch]

    cov = recover(clips, texts, "en", decode, _looped)
    assert asked == [(5.5, 20.0, 2)]  # one decode, no parts retry after it
    assert texts[0].text.startswith(kept + " word0 word1") and cov.short == set()
    assert cov.retried == 1


PARTS = ["The cat sat on a mat by the door.", "Rain fell on the quiet harbour all night.",
         "Seven ships left before dawn.", "Nobody saw the lighthouse keeper again."]


def test_a_clip_still_short_after_its_stretch_is_decoded_again_in_parts() -> None:
    clips, texts = _stopped_early()
    asked: list[list[float]] = []

    def decode(batch: list[Clip], beam: int, no_repeat: int = 0) -> list[ClipText]:
        asked.append([c.start for c in batch])
        if len(asked) == 1:  # the stretch: one more word, still short
            return [ClipText("x", -0.5, 0.02, [(" one", c.start + 0.1, c.start + 0.5, 0.8)])
                    for c in batch]
        return [ClipText(PARTS[k], -0.4, 0.02, None) for k in range(len(batch))]

    cov = recover(clips, texts, "en", decode, _looped)
    assert asked == [[5.5], [0.0, 5.5, 10.5, 15.5]]
    assert texts[0].text == " ".join(PARTS)
    assert cov.retried == 1 and cov.short == set()
