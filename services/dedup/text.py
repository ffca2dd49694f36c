"""The text half of a signature: normalised words, shingles, MinHash and LSH band keys.

Two transcripts of one recording differ by a word or two (boundaries moved, an ASR slip); two
unrelated transcripts share almost no word pair. Shingles are word bigrams (character trigrams
for scripts written without spaces); a MinHash of ``BANDS x ROWS`` values estimates their
Jaccard similarity, and each band of ``ROWS`` values is hashed into one 64-bit key: two
segments are candidates when any key is equal (probability ``1 - (1 - J^ROWS)^BANDS``:
0.999 at J=0.85, 0.89 at J=0.7, under 1e-7 per pair of unrelated texts).

Every constant here is part of the signature format (:data:`TEXT_VERSION`): changing one makes
old signatures incomparable, so it is a new version.
"""

from __future__ import annotations

import itertools
import unicodedata

import numpy as np

from services.dedup.minhash import MinHashFamily, hash_strings

BANDS = 12
ROWS = 5
TEXT_VERSION = f"wb2-mh{BANDS}x{ROWS}"
FAMILY = MinHashFamily("", BANDS, ROWS)


def normalise(text: str) -> str:
    """Case, width and punctuation folded away; one space between words."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = "".join(" " if unicodedata.category(c)[0] in "PSZC" else c for c in t)
    return " ".join(t.split())


def _spaceless(t: str) -> bool:
    return any(unicodedata.east_asian_width(c) == "W" for c in t)


def shingles(text: str) -> list[str]:
    t = normalise(text)
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


def minhash(text: str) -> np.ndarray | None:
    """``BANDS * ROWS`` uint32 values, or None for a text with no words."""
    sh = shingles(text)
    return FAMILY.minhash(hash_strings(sh)) if sh else None


def band_keys(mh: np.ndarray | None) -> list[int]:
    return FAMILY.band_keys(mh)


def text_keys(text: str) -> list[int]:
    return band_keys(minhash(text))
