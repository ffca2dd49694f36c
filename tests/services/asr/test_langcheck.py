"""The second opinion on a short file's language: which two languages are decoded, and when
the kept one wins."""

from __future__ import annotations

from services.asr.langcheck import SHORT_SECONDS, candidates, second_opinion
from services.asr.langid import LanguageGuess

# Whisper base on a 2 s Italian prompt: Spanish, sure of it
ITALIAN_SAID_SPANISH = LanguageGuess("es", 0.9, 1, {"es": 0.9, "it": 0.094, "pl": 0.002})


def decoder(logprobs: dict[str, float], calls: list[str]):  # type: ignore[no-untyped-def]
    def decode(language: str) -> float:
        calls.append(language)
        return logprobs[language]
    return decode


def test_the_likeliest_kept_language_against_the_likeliest_other() -> None:
    assert candidates(ITALIAN_SAID_SPANISH, ["ja", "en", "it"]) == ("it", "es")
    # no kept language Whisper gives a chance: nothing to try
    assert candidates(ITALIAN_SAID_SPANISH, ["ja", "en"]) is None


def test_kept_when_the_kept_language_reads_better() -> None:
    calls: list[str] = []
    got = second_opinion(ITALIAN_SAID_SPANISH, ["it"], 2.0, True,
                         decoder({"it": -0.15, "es": -0.4}, calls))
    assert got == "it" and calls == ["it", "es"]
    # better, but by less than the margin: the distributions' word stands
    assert second_opinion(ITALIAN_SAID_SPANISH, ["it"], 2.0, True,
                          decoder({"it": -0.2, "es": -0.24}, [])) is None


def test_only_short_files_looked_at_whole_get_it() -> None:
    calls: list[str] = []
    decode = decoder({"it": -0.1, "es": -0.9}, calls)
    assert second_opinion(ITALIAN_SAID_SPANISH, ["it"], SHORT_SECONDS, True, decode) is None
    assert second_opinion(ITALIAN_SAID_SPANISH, ["it"], 2.0, False, decode) is None
    assert calls == []  # no decode spent on them
