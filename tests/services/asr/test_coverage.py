"""The coverage retry when a part of a clip loops (services/asr/coverage.py)."""

from __future__ import annotations

from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.coverage import NO_REPEAT_NGRAM, RETRY_BEAM, recover
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
