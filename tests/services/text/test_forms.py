"""The spoken text forms (services/text): the real normalisers (WeTextProcessing, OpenJTalk),
on the sentences bench/text.py measures, and their way through the records."""

from __future__ import annotations

import pytest

from services.records import AsrLine, AsrSegment, Sidecar, TokenLine
from services.text.forms import TextForms, piece_forms, text_forms, with_forms


def test_english_numbers_money_percent_written_as_spoken() -> None:
    f = text_forms("The ticket cost 25 dollars, 12% more than in 2024.", "en")
    assert f.text_spoken == ("The ticket cost twenty five dollars, twelve percent more than in "
                             "twenty twenty four.")
    assert f.text_spoken_by is not None and f.text_spoken_by.startswith("WeTextProcessing ")
    assert f.reading is None and f.phonemes is None


def test_english_plain_sentence_unchanged() -> None:
    text = "Could you tell me where the station is, please?"
    assert text_forms(text, "en").text_spoken == text


def test_japanese_spoken_reading_accent() -> None:
    f = text_forms("今日のホール8200円でした", "ja")
    assert f.text_spoken == "今日のホール八千二百円でした"
    assert f.reading == "キョーノホールハッセンニヒャクエンデシタ"
    assert f.accent == "キョ'ーノ/ホ'ール/ハッセ'ン/ニヒャクエンデ'シタ"
    assert f.text_spoken_by is not None and f.text_spoken_by.startswith("pyopenjtalk-plus ")


def test_japanese_symbols_and_digits_inside_words() -> None:
    f = text_forms("2024年3月5日、50%の人が5kgを持って。", "ja")
    assert f.text_spoken == "二千二十四年三月五日、五十パーセントの人が五キログラムを持って。"


def test_other_language_numbers_and_none() -> None:
    assert text_forms("Il a 25 ans.", "fr").text_spoken == "Il a vingt-cinq ans."
    assert text_forms("25", "zz") == TextForms()
    assert text_forms("25", None) == TextForms()


def test_english_phonemes_when_asked() -> None:
    from tests.system_packages import require

    require("espeak-ng")
    f = text_forms("It costs 25 dollars.", "en", phonemes=True)
    assert f.phonemes and "ˈ" in f.phonemes and "twˈɛnti" in f.phonemes


def _seg(idx: int, text: str, kept: bool, language: str | None = None) -> AsrSegment:
    return AsrSegment(idx=idx, start=float(idx), end=idx + 1.0, text=text, kept=kept,
                      reason=None if kept else "low_logprob", language=language)


def test_asr_line_kept_segments_get_forms_in_their_own_language() -> None:
    from services.text.forms import normaliser

    line = AsrLine(key="k", language="en", status="ok", duration=9.0, segments=[
        _seg(0, "I paid 5 dollars.", True), _seg(1, "3個です", True, "ja"),
        _seg(2, "I paid 7 dollars.", False)])
    out = AsrLine.from_json(with_forms(line, normaliser()).to_json())
    a, b, c = out.segments
    assert a.text == "I paid 5 dollars." and a.text_spoken == "I paid five dollars."
    assert b.text_spoken == "三個です" and b.reading == "サンコデス"
    assert c.text_spoken is None and "text_spoken" not in c.to_json()


def test_forms_carried_through_sidecar_and_tokens_line() -> None:
    f = text_forms("今日は3人", "ja")
    side = Sidecar.from_json(Sidecar(text="今日は3人", language="ja", **f.fields()).to_json())
    tok = TokenLine.from_json(TokenLine(id="k_0000", text=side.text,
                                        **TextForms.of(side).fields()).to_json())
    assert TextForms.of(tok) == f and f.reading == "キョーワサンニン"


@pytest.mark.parametrize("phonemes", [False, True])
def test_a_piece_gets_its_own_forms(phonemes: bool) -> None:
    if phonemes:
        from tests.system_packages import require

        require("espeak-ng")
    whole = text_forms("I paid 5 dollars and 6 cents.", "en", phonemes)
    piece = piece_forms(whole, "and 6 cents.", "en")
    assert piece.text_spoken == "and six cents."
    assert (piece.phonemes is not None) == phonemes
    assert piece_forms(TextForms(), "and 6 cents.", "en") == TextForms()


def test_a_segment_cut_at_a_speaker_change_gets_each_pieces_forms() -> None:
    import numpy as np

    from services.enhance.segments import CutSegment, SegmentSpec
    from services.enhance.turns import cut_segment, pieces
    from services.records import Word

    words = [Word(word=f" {w}", start=a, end=b, probability=0.9) for w, a, b in
             [("I", 0.0, 0.2), ("paid", 0.3, 0.6), ("5", 0.7, 1.0), ("dollars.", 1.1, 1.4),
              ("6", 2.0, 2.3), ("cents.", 2.4, 2.9)]]
    text = "I paid 5 dollars. 6 cents."
    spec = SegmentSpec("k", 0, 0.0, 3.0, text, "en", words=words,
                       forms=text_forms(text, "en"))
    seg = CutSegment(0, spec, 48000, np.zeros(0, np.float32))
    after = np.zeros(3 * 24000, np.float32)
    (a, _, _), (b, _, _) = cut_segment(seg, after, 24000, None, 16000, pieces(spec, [170]))
    assert (a.spec.text, b.spec.text) == ("I paid 5 dollars.", "6 cents.")
    assert a.spec.forms.text_spoken == "I paid five dollars."
    assert b.spec.forms.text_spoken == "six cents."


def test_a_text_the_normaliser_fails_on_keeps_its_segment_without_forms(caplog) -> None:
    from services.text.forms import TextNormaliser

    class Broken:
        name, version = "broken", "0"

        def spoken(self, text: str, seconds: float | None = None) -> str:
            raise RuntimeError("Operation failed")

    n = TextNormaliser()
    n._by_language["en"] = Broken()
    line = AsrLine(key="k", language="en", status="ok", duration=9.0,
                   segments=[_seg(0, "I paid 5 dollars.", True)])
    out = with_forms(line, n)
    assert out.segments[0].kept and out.segments[0].text_spoken is None
    assert n.failed == 1 and "broken failed" in caplog.text
    # tabs and line breaks (which the English FSTs refuse) are spaces to the normaliser
    assert text_forms("I paid\t5\ndollars.", "en").text_spoken == "I paid five dollars."


@pytest.mark.slow  # the normaliser's own constructor re-optimises its FSTs: ~7 s
def test_the_shipped_fsts_read_as_they_are_rewrite_as_the_normalisers_constructor() -> None:
    from tn.english.normalizer import Normalizer

    from services.text.english import _shipped

    texts = ["I paid $5.30 on Jan 3rd, 2021 at 10:30 am.", "Dr. Smith lives at 221B Baker St.",
             "The 2nd of 3 items costs 45%.", "Call 555-1234 now!", "It is about 3.5 km away."]
    fast, built = _shipped(), Normalizer()
    assert [fast.normalize(t) for t in texts] == [built.normalize(t) for t in texts]
