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

import hashlib
import itertools
import unicodedata

import numpy as np

BANDS = 12
ROWS = 5
TEXT_VERSION = f"wb2-mh{BANDS}x{ROWS}"
_M64 = (1 << 64) - 1


def _seed(name: str, k: int) -> np.ndarray:
    out = [int.from_bytes(hashlib.blake2b(f"onsei-{name}-{i}".encode(), digest_size=8).digest(),
                          "little") | 1 for i in range(k)]
    return np.array(out, dtype=np.uint64)


_XOR = _seed("minhash-xor", BANDS * ROWS)
_MUL = _seed("minhash-mul", BANDS * ROWS)
_BAND_MUL = _seed("band-mul", ROWS)


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


def _hash64(items: list[str]) -> np.ndarray:
    return np.array([int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(),
                                    "little") for s in items], dtype=np.uint64)


def minhash(text: str) -> np.ndarray | None:
    """``BANDS * ROWS`` uint32 values, or None for a text with no words."""
    sh = shingles(text)
    if not sh:
        return None
    h = _hash64(sh)[:, None]
    with np.errstate(over="ignore"):
        mixed = ((h ^ _XOR[None, :]) * _MUL[None, :]) >> np.uint64(32)  # multiply-shift hashing
    return mixed.min(axis=0).astype(np.uint32)


def band_keys(mh: np.ndarray | None) -> list[int]:
    """One signed 64-bit key per band (the band's number is mixed in: bands never collide)."""
    if mh is None:
        return []
    rows = mh.astype(np.uint64).reshape(BANDS, ROWS)
    with np.errstate(over="ignore"):
        acc = np.arange(1, BANDS + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        for j in range(ROWS):
            acc = (acc ^ rows[:, j]) * _BAND_MUL[j]
            acc ^= acc >> np.uint64(29)
    return [int(v) for v in acc.view(np.int64)]


def text_keys(text: str) -> list[int]:
    return band_keys(minhash(text))
