"""The text half of a signature: normalised words, shingles, MinHash and LSH band keys.

Two transcripts of one recording differ by a word or two (boundaries moved, an ASR slip); two
unrelated transcripts share almost no word pair. Numbers are spelled out in the segment's
language first: an ASR writes the same spoken "ten" as "10" in one copy and "ten" in another.
Shingles are word bigrams (character trigrams for scripts written without spaces); a MinHash of
``BANDS x ROWS`` values estimates their Jaccard similarity, and each band of ``ROWS`` values is
hashed into one 64-bit key: two segments are candidates when any key is equal (probability
``1 - (1 - J^ROWS)^BANDS``: 0.999 at J=0.85, 0.89 at J=0.7, under 1e-7 per pair of unrelated texts).

Every constant here is part of the signature format (:data:`TEXT_VERSION`): changing one makes
old signatures incomparable, so it is a new version.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

import numpy as np

from services.dedup.minhash import MinHashFamily, hash_strings

BANDS = 12
ROWS = 5
TEXT_VERSION = f"wb2n-mh{BANDS}x{ROWS}"
FAMILY = MinHashFamily("", BANDS, ROWS)


_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)|\d+")


def spell_numbers(text: str, language: str | None) -> str:
    """Each run of digits as words of ``language`` ("10" -> "ten", "1,984" -> "one thousand,
    nine hundred and eighty-four"); left as digits where num2words has no such language."""
    if not language or not any(c.isdigit() for c in text):
        return text
    from num2words import CONVERTER_CLASSES

    speller = CONVERTER_CLASSES.get(language)
    if speller is None:
        return text

    def say(m: re.Match[str]) -> str:
        try:
            return f" {speller.to_cardinal(int(m.group().replace(',', '')))} "
        except (OverflowError, ValueError):  # past the language's largest named number
            return m.group()

    return _NUMBER.sub(say, text)


def normalise(text: str, language: str | None = None) -> str:
    """Numbers spelled out (:func:`spell_numbers`); case, width and punctuation folded away;
    one space between words."""
    t = spell_numbers(unicodedata.normalize("NFKC", text).casefold(), language)
    t = "".join(" " if unicodedata.category(c)[0] in "PSZC" else c for c in t)
    return " ".join(t.split())


def _spaceless(t: str) -> bool:
    return any(unicodedata.east_asian_width(c) == "W" for c in t)


def shingles(text: str, language: str | None = None) -> list[str]:
    t = normalise(text, language)
    if not t:
        return []
    if _spaceless(t):
        chars = t.replace(" ", "")
        n = 3
        return sorted({chars[i:i + n] for i in range(max(1, len(chars) - n + 1))})
    words = t.split()
    if len(words) < 2:
        return words
    return sorted({f"{a} {b}" for a, b in itertools.pairwise(words)})


def minhash(text: str, language: str | None = None) -> np.ndarray | None:
    """``BANDS * ROWS`` uint32 values, or None for a text with no words."""
    sh = shingles(text, language)
    return FAMILY.minhash(hash_strings(sh)) if sh else None


def band_keys(mh: np.ndarray | None) -> list[int]:
    return FAMILY.band_keys(mh)


def text_keys(text: str, language: str | None = None) -> list[int]:
    return band_keys(minhash(text, language))
