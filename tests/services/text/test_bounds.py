"""A segment's text past a bound keeps its segment, without spoken forms, and is counted; the
normaliser never sees it (WeTextProcessing took 32 s and 2.5 GiB on 4,000 digits)."""

from __future__ import annotations

import pytest

from services.records import AsrLine
from services.text import bounds
from services.text.english import EnglishSpoken, pieces
from services.text.forms import TextNormaliser, normaliser, with_forms
from tests.services.text.test_forms import _seg


@pytest.mark.parametrize("text", [
    "7" * 4000,  # the 4,000 digits
    ("On May 5, 2021 at 3:30 pm we paid $45.50 for 12 kg. " * 200)[:10_000],  # 10k characters
    "call 0" + "1" * 80 + " now",  # one word longer than any number
])
def test_a_runaway_english_text_keeps_its_segment_without_forms(text: str) -> None:
    n = normaliser()  # the process's own (its English FSTs load once)
    before = (n.bounded, n.failed)
    line = AsrLine(key="k", language="en", status="ok", duration=9.0,
                   segments=[_seg(0, text, True), _seg(1, "I paid 5 dollars.", True)])
    out = with_forms(line, n)
    assert out.segments[0].kept and out.segments[0].text == text
    assert out.segments[0].text_spoken is None
    assert out.segments[1].text_spoken == "I paid five dollars."  # the next one still gets it
    assert (n.bounded - before[0], n.failed - before[1]) == (1, 0)


def test_every_language_is_bounded_in_length() -> None:
    n = TextNormaliser()
    assert n.forms("1 " * 3000, "de").text_spoken is None
    assert n.forms("今日は3月です。" * 300, "ja").text_spoken is None
    assert n.bounded == 2


def test_a_long_english_text_within_bounds_goes_in_pieces() -> None:
    sentence = "On May 5 we paid $45 for 12 kg."
    text = " ".join([sentence] * 12)  # 383 characters: two pieces
    cut = pieces(text)
    assert len(cut) == 2 and all(len(p) <= bounds.PIECE for p in cut)
    assert " ".join(cut) == text
    n = normaliser()
    spoken = n.forms(text, "en").text_spoken
    one = n.forms(sentence, "en").text_spoken
    assert spoken == " ".join([one or ""] * 12) and "five" in spoken


def test_a_sentence_longer_than_a_piece_is_cut_between_words() -> None:
    text = " ".join(["word"] * 200)
    cut = pieces(text, 50)
    assert all(len(p) <= 50 for p in cut) and " ".join(cut) == text


def test_time_is_bounded_between_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(bounds.TextTooCostly):
        normaliser()._for("en").spoken("I paid 5 dollars.", -1.0)
    monkeypatch.setattr(bounds, "SECONDS", -1.0)
    n = TextNormaliser()
    n._by_language["en"] = normaliser()._for("en")
    assert n.forms("I paid 5 dollars.", "en").text_spoken is None and n.bounded == 1


def test_the_fsts_load_is_not_counted_against_the_first_segment(monkeypatch) -> None:
    """Loading the English FSTs takes seconds on a busy machine: the first segment's budget
    starts once they are loaded (a fake clock: the load takes 10 s of a 5 s budget)."""
    clock = [100.0]
    monkeypatch.setattr(bounds.time, "monotonic", lambda: clock[0])

    class _Loaded:
        def normalize(self, text: str) -> str:
            return text.replace("5", "five")

    def load(self) -> _Loaded:
        clock[0] += 10.0
        return _Loaded()

    monkeypatch.setattr(EnglishSpoken, "_normalizer", property(load))
    assert EnglishSpoken().spoken("I paid 5 dollars.", 5.0) == "I paid five dollars."
