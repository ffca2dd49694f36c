"""Language per segment: each window in its own language, a window holding a switch split at it,
clips cut where their language changes; on real files spliced from Japanese, English and German
speech (bench/wild/language.py builds them)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import pytest

from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.langid import (
    LanguageGuess,
    kept_language,
    slices,
    unit_languages,
    window_language,
)
from services.asr.multilingual import by_language, relabel
from services.asr.policy import build_segments
from services.asr.settings import AsrSettings
from services.asr.windows import Window
from tests.services.asr.conftest import EN_TEST, SR, Calls
from tests.system_packages import ESPEAK, POCKETSPHINX, require

KEPT = ["ja", "en"]


def test_window_language_names_a_switch_only_when_slices_are_sure_of_two() -> None:
    ja, en = [("<|ja|>", 0.9), ("<|en|>", 0.05)], [("<|en|>", 0.95), ("<|ja|>", 0.01)]
    assert window_language([ja, ja, ja], KEPT) == ("ja", ["ja"])
    lang, sure = window_language([ja, ja, en], KEPT)
    assert lang == "ja" and sure == ["ja", "en"]
    # Whisper unsure which language, but sure it is none kept (German on whisper base)
    de = [("<|de|>", 0.35), ("<|cy|>", 0.2), ("<|lv|>", 0.2), ("<|en|>", 0.05), ("<|ja|>", 0.02)]
    assert window_language([de, de, de], KEPT) == ("de", ["de"])
    assert window_language([ja, de, de], KEPT)[1] == ["ja", "de"]
    # unsure between a kept language and others: the kept one (decoded: nothing lost)
    vague = [("<|zh|>", 0.4), ("<|ja|>", 0.35), ("<|ko|>", 0.1)]
    assert window_language([vague] * 3, KEPT) == ("ja", [])


def test_the_last_slice_hears_the_window_padding_as_whisper_does() -> None:
    # a 20 s window of a 30 s encoder output: its last third runs on into the padding
    assert slices(1000, total=1500) == [(0, 333), (333, 666), (666, 1500)]
    assert slices(1500, total=1500) == [(0, 500), (500, 1000), (1000, 1500)]
    assert slices(600, total=1500) == [(0, 1500)]  # under 15 s: looked at whole
    assert slices(900) == [(0, 300), (300, 600), (600, 900)]  # no padding known: thirds


def test_unit_languages_switch_only_on_enough_evidence() -> None:
    ja, en = [("ja", 0.9), ("en", 0.01)], [("en", 0.9), ("ja", 0.01)]
    assert unit_languages([ja, ja, en, en], KEPT, [3, 3, 3, 3]) == ["ja", "ja", "en", "en"]
    # one unsure span in a run does not switch; one short span weighs less
    unsure = [("en", 0.5), ("ja", 0.4)]
    assert unit_languages([ja, unsure, ja], KEPT, [3, 3, 3]) == ["ja"] * 3
    assert unit_languages([ja, en, ja], KEPT, [3, 0.5, 3]) == ["ja"] * 3
    assert unit_languages([ja, en, ja], KEPT, [3, 3, 3]) == ["ja", "en", "ja"]
    assert unit_languages([], KEPT, []) == []


def test_a_file_is_kept_when_one_window_is_sure_of_a_kept_language() -> None:
    mixed = LanguageGuess("de", 0.45, 3, {"de": 0.45, "en": 0.3})
    de = [("<|de|>", 0.6), ("<|en|>", 0.1)]
    assert kept_language(mixed, [de, de], KEPT, 0.5) is None
    assert kept_language(mixed, [de, [("<|en|>", 0.9)], de], KEPT, 0.5) == "en"
    assert kept_language(LanguageGuess("ja", 0.9, 1), [], KEPT, 0.5) == "ja"


def test_clips_are_cut_where_their_language_changes() -> None:
    clips = [Clip(0.0, 12.0, pauses=[(4.0, 5.0), (8.0, 9.0)]), Clip(20.0, 25.0)]
    lang = {(0.0, 4.0): "ja", (5.0, 8.0): "ja", (9.0, 12.0): "en", (20.0, 25.0): "en"}
    new, langs, index = by_language(clips, lang)
    assert [(c.start, c.end, c.pauses) for c in new] == [
        (0.0, 8.0, [(4.0, 5.0)]), (9.0, 12.0, []), (20.0, 25.0, [])]
    assert langs == ["ja", "en", "en"]
    w = relabel([Window([((5.0, 8.0), 0), ((9.0, 12.0), 0), ((20.0, 25.0), 1)])], index)
    assert [i for _, i in w[0].units] == [0, 1, 2]
    # one language: the clips as they were
    same, _, _ = by_language(clips, dict.fromkeys(lang, "ja"))
    assert [(c.start, c.end, c.pauses) for c in same] == [
        (c.start, c.end, c.pauses) for c in clips]


def test_segments_in_a_language_not_kept_are_flagged_language() -> None:
    clips = [Clip(0.0, 5.0), Clip(6.0, 11.0)]
    texts = [ClipText("hello there my friend", -0.2, 0.01), ClipText("", 0.0, 1.0, [])]
    segs = build_segments(clips, texts, set(), AsrSettings(), languages=["en", "de"])
    assert [(s.language, s.kept, s.reason) for s in segs.lines] == [
        ("en", True, None), ("de", False, "language")]


# --- real speech, the real model ------------------------------------------------------------------
@dataclass
class Passes:
    """A file's encoder passes: the model's (every one), and the window decoder's windows."""

    model: int = 0
    encodings: list = field(default_factory=list)  # encodings.Encodings, one per decoder


@contextmanager
def counted(stage, passes: Passes | None = None) -> Iterator[Calls]:
    """The stage's model with its calls counted (given back as it was); with ``passes``, each
    window decoder's encodings kept there too, with no bound on the rows they keep (the bound:
    test_encodings.py), so that what is asserted is which windows are met again."""
    import services.asr.multilingual as ml

    loaded = stage._loaded
    calls = Calls(loaded.model.model)
    loaded.model.model = calls
    made = ml.Encodings

    class Seen(made):
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            if passes is not None:
                self.kept_bytes = 1 << 40
                passes.encodings.append(self)

    ml.Encodings = Seen
    try:
        yield calls
    finally:
        ml.Encodings = made
        loaded.model.model = calls._model


@pytest.fixture(scope="module")
def spliced(asr_stage):
    require(ESPEAK, POCKETSPHINX)
    from fixtures.languages import splice

    # Blocks about as short as the assertions allow (with 20 s of Japanese each side, whisper
    # base read the German as Latin); minutes of them: bench/wild/language.py.
    files = {"ja-en-ja": splice("ja-en-ja", [("ja", 30.0), ("en", 20.0), ("ja", 30.0)], 0),
             "ja-de-ja": splice("ja-de-ja", [("ja", 30.0), ("de", 20.0), ("ja", 30.0)], 4),
             "en-real-ja": splice("real-en-ja", [("en-real", 20.0), ("ja", 15.0)], 3)}
    out = {}
    for k, f in files.items():
        passes = Passes()
        with counted(asr_stage, passes) as calls:
            got = asr_stage.transcribe_file(k, f.audio)
        passes.model = calls.calls.get("encode", 0)
        out[k] = (f, got, passes)
    return out


def test_english_turns_in_a_japanese_file_are_english_segments(spliced) -> None:
    from fixtures.languages import Score, score

    total = Score()
    for name, (f, got, _) in spliced.items():
        line = got.line
        assert line.ok, (name, line.status)
        assert all(isinstance(s.language, str) for s in line.segments)
        score(line, f, KEPT, total)
        if name != "ja-de-ja":  # both languages kept: English text in English segments
            en = " ".join(s.text for s in line.kept if s.language == "en")
            assert len(en.split()) >= 15, (name, en)
            assert {s.language for s in line.kept} == {"ja", "en"}
    assert total.right / total.segments >= 0.9, (total.right, total.segments)
    assert total.invented == 0
    assert total.lost_at_switch == 0 and total.hallucinations_kept == 0


def test_no_kept_segment_ends_before_its_last_sentence_does(spliced) -> None:
    """A run of one language ends a window at each switch, and Whisper's alignment gives a
    window's last speech to the full stop and the end token: the segment trimmed to its words
    lost up to 1.5 s of its last sentence (words.run_on)."""
    for name, (f, got, _) in spliced.items():
        for s in got.line.kept:
            ends = [b for a, b, _, _ in f.sentences if min(b, s.end) > max(a, s.start)]
            # a reference sentence ends with espeak's trailing silence (0.3-0.5 s)
            assert s.end >= max(ends) - 0.5, (name, s.start, s.end, max(ends), s.text)


def test_speech_in_a_language_not_kept_is_flagged_per_segment(spliced) -> None:
    _, got, _ = spliced["ja-de-ja"]
    line = got.line
    assert line.ok and line.language == "ja"
    flagged = [s for s in line.segments if s.reason == "language"]
    # whisper base reads espeak's German as German or Latin by the CPU's arithmetic (int8 on
    # AVX2 or AVX-512): either is a language not kept, which is what is flagged
    assert flagged and all(s.language in ("de", "la") and not s.text for s in flagged)
    assert sum(s.end - s.start for s in flagged) >= 10.0  # the German block's speech
    assert all(s.language == "ja" for s in line.kept) and len(line.kept) >= 3


def test_a_span_heard_alone_is_encoded_once_per_file(spliced) -> None:
    """Whisper's encoder pads every window to 30 s: a span looked at alone for its language is
    not encoded again for a run of that one span or a coverage retry of it."""
    reused = 0
    for name, (_, _, passes) in spliced.items():
        assert len(passes.encodings) == 1, name
        enc = passes.encodings[0]
        again = [k for k, n in enc.encoded.items() if len(k) == 1 and n > 1]
        assert not again, (name, again)
        # every pass but the language-ID looks' is the window decoder's
        looks = passes.model - sum(enc.encoded.values())
        assert 1 <= looks <= 3, (name, passes.model, enc.encoded)
        reused += enc.reused
    # ja-en-ja's run of one English span, en-real-ja's retried parts: decoded from the rows
    # their language came from
    assert reused >= 1


def test_kept_rows_decode_as_fresh_ones_and_a_language_not_kept_is_not_encoded(
        asr_stage) -> None:
    require(ESPEAK)
    from fixtures.speechgen import concat, silence, synth
    from services.asr.multilingual import NOT_DECODED, WindowDecoder

    speech = synth(EN_TEST[0])
    audio = concat([silence(0.5), speech, silence(0.5)])
    span = (0.5, 0.5 + speech.size / SR)
    dec = WindowDecoder(asr_stage._transcriber(), audio, KEPT, 8, nullcontext)
    with counted(asr_stage) as calls:
        fresh = dec.run([Window([(span, 0)])], 5, languages=["en"])
        assert calls.calls.get("encode") == 1
        again = dec.run([Window([(span, 0)])], 5, languages=["en"])
        german = dec.run([Window([(span, 0)])], 5, languages=["de"])
        assert calls.calls.get("encode") == 1 and dec.encodings.reused == 1
    assert fresh.texts[0].text and again.texts == fresh.texts
    assert german.texts == [NOT_DECODED] and german.languages == ["de"]
