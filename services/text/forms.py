"""The text forms of one segment, computed from its ``text`` and ``language``: the one function
asr (a kept segment) and enhance (a piece cut at a speaker change) call.

``text_spoken`` is written by the normaliser of the segment's language: English by
WeTextProcessing, Japanese by OpenJTalk (pyopenjtalk-plus) with num2words for the digits it
leaves, any other language by num2words for its numbers (where num2words has the language:
digits only, no dates or units). ``text_spoken_by`` names it with its version. Japanese adds
``reading`` and ``accent`` (services/text/japanese.py); English adds IPA ``phonemes`` when
asked (espeak-ng, services/text/phonemes.py)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Any, TypedDict

from services.text import bounds
from services.text.bounds import MAX_CHARS, TextTooCostly

log = logging.getLogger(__name__)

FIELDS = ("text_spoken", "text_spoken_by", "reading", "accent", "phonemes")


class TextFormFields(TypedDict, total=False):
    """A record constructor's keyword arguments for the forms there are (in FIELDS' order)."""

    text_spoken: str
    text_spoken_by: str
    reading: str
    accent: str
    phonemes: str


@dataclass(frozen=True)
class TextForms:
    text_spoken: str | None = None
    text_spoken_by: str | None = None  # "<normaliser> <version>"
    reading: str | None = None
    accent: str | None = None
    phonemes: str | None = None

    def fields(self) -> TextFormFields:
        """The forms there are, for a record's constructor (absent ones are not written)."""
        out = TextFormFields()
        if self.text_spoken is not None:
            out["text_spoken"] = self.text_spoken
        if self.text_spoken_by is not None:
            out["text_spoken_by"] = self.text_spoken_by
        if self.reading is not None:
            out["reading"] = self.reading
        if self.accent is not None:
            out["accent"] = self.accent
        if self.phonemes is not None:
            out["phonemes"] = self.phonemes
        return out

    @classmethod
    def of(cls, record: Any) -> TextForms:
        """The forms a record carries (an asr segment, a sidecar, a tokens line)."""
        return cls(**{k: getattr(record, k, None) for k in FIELDS})


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


class _Num2Words:
    """Numbers only, in the languages num2words has."""

    name = "num2words"

    def __init__(self, language: str) -> None:
        self.language = language

    @property
    def version(self) -> str:
        return metadata.version("num2words")

    def spoken(self, text: str) -> str:
        from num2words import num2words

        def word(m: re.Match[str]) -> str:
            raw = m.group()
            value: float | int = float(raw.replace(",", ".")) if "." in raw or "," in raw \
                else int(raw)
            return str(num2words(value, lang=self.language))

        return _NUMBER.sub(word, text)


def _num2words_has(language: str) -> bool:
    from num2words import CONVERTER_CLASSES

    return language in CONVERTER_CLASSES


class TextNormaliser:
    """One per process (:func:`normaliser`): each language's normaliser is built when its first
    segment comes (the English FSTs and the Japanese dictionary take seconds to load)."""

    def __init__(self, phonemes: bool = False) -> None:
        self.phonemes = phonemes
        self._by_language: dict[str, Any] = {}
        self.failed = 0  # texts a normaliser raised on (their segments have no forms)
        self.bounded = 0  # texts past a bound (services/text/bounds.py), given no forms

    def _for(self, language: str) -> Any:
        if language not in self._by_language:
            if language == "en":
                from services.text.english import EnglishSpoken

                self._by_language[language] = EnglishSpoken()
            elif language == "ja":
                from services.text.japanese import JapaneseText

                self._by_language[language] = JapaneseText()
            elif _num2words_has(language):
                self._by_language[language] = _Num2Words(language)
            else:
                self._by_language[language] = None
        return self._by_language[language]

    def describe(self, language: str | None) -> str | None:
        """``"<name> <version>"`` of the normaliser that writes ``language``'s text_spoken."""
        n = self._for(language) if language else None
        return None if n is None else f"{n.name} {n.version}"

    def forms(self, text: str, language: str | None) -> TextForms:
        """The forms of ``text``; none where ``language`` has no normaliser, or where the
        normaliser fails on it (counted in ``failed``, logged) or where the text is past a
        bound (counted in ``bounded``): the segment is kept all the same, with its ``text``."""
        n = self._for(language) if language else None
        if n is None:
            return TextForms()
        text = " ".join(text.split())
        try:
            if len(text) > MAX_CHARS:
                raise TextTooCostly(f"{len(text)} characters (at most {MAX_CHARS})")
            return self._forms(n, text, language)
        except TextTooCostly as e:
            self.bounded += 1
            log.warning("text_spoken: %s not given %r...: %s", n.name, text[:80], e)
            return TextForms()
        except Exception as e:  # noqa: BLE001 - a text it cannot read must not cost the file
            self.failed += 1
            log.warning("text_spoken: %s failed on %r: %s: %s", n.name, text[:80],
                        type(e).__name__, str(e)[:200])
            return TextForms()

    def _forms(self, n: Any, text: str, language: str | None) -> TextForms:
        by = f"{n.name} {n.version}"
        if language == "ja":
            ja = n.forms(text)
            return TextForms(ja.text_spoken, by, ja.reading, ja.accent)
        spoken = n.spoken(text, bounds.SECONDS) if language == "en" else n.spoken(text)
        ipa = None
        if self.phonemes and language == "en":
            from services.text.phonemes import english_ipa

            ipa = english_ipa(spoken)
        return TextForms(spoken, by, phonemes=ipa)


@cache
def normaliser(phonemes: bool = False) -> TextNormaliser:
    return TextNormaliser(phonemes)


def text_forms(text: str, language: str | None, phonemes: bool = False) -> TextForms:
    """A segment's forms from its text and language (None or a language with no normaliser:
    none)."""
    return normaliser(phonemes).forms(text, language)


def with_forms(line: Any, normaliser: TextNormaliser) -> Any:
    """An asr line (``services.records.AsrLine``) whose kept segments carry their forms, each
    in its own language (the line's for a segment written without one)."""
    if not any(s.kept for s in line.segments):
        return line
    segs = [s.model_copy(update=normaliser.forms(s.text, s.language or line.language).fields())
            if s.kept else s for s in line.segments]
    return line.model_copy(update={"segments": segs})


def piece_forms(whole: TextForms, text: str, language: str | None) -> TextForms:
    """The forms of a piece of a segment (its words' ``text``): computed again, since a number
    may be read differently out of its context; none where the whole had none (an asr line
    written before the forms existed), phonemes where the whole had them."""
    if whole.text_spoken is None:
        return TextForms()
    return text_forms(text, language, phonemes=whole.phonemes is not None)
