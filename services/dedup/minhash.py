"""MinHash and LSH band keys over a set of 64-bit item hashes: the one mechanism behind both
halves of a signature's candidate keys (the text's word shingles, the audio's landmarks).

``bands x rows`` MinHash values estimate the Jaccard similarity J of two sets; each band of
``rows`` values is hashed into one signed 64-bit key, so two sets share a key with probability
``1 - (1 - J^rows)^bands``. A family's name seeds its hash functions and its band numbers: keys
of two families never collide, so they can live in one index column.

Every constant of a family is part of the signature format: changing one is a new version.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


def _seed(name: str, k: int) -> np.ndarray:
    out = [int.from_bytes(hashlib.blake2b(f"onsei-{name}-{i}".encode(), digest_size=8).digest(),
                          "little") | 1 for i in range(k)]
    return np.array(out, dtype=np.uint64)


def hash_strings(items: list[str]) -> np.ndarray:
    return np.array([int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(),
                                    "little") for s in items], dtype=np.uint64)


@dataclass(frozen=True)
class MinHashFamily:
    """``prefix`` names the family's seeds ("" is the text family's, kept as it was first
    published); ``band_base`` offsets its band numbers."""

    prefix: str
    bands: int
    rows: int
    band_base: int = 0
    _xor: np.ndarray = field(init=False, repr=False, compare=False)
    _mul: np.ndarray = field(init=False, repr=False, compare=False)
    _band_mul: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        k = self.bands * self.rows
        object.__setattr__(self, "_xor", _seed(f"{self.prefix}minhash-xor", k))
        object.__setattr__(self, "_mul", _seed(f"{self.prefix}minhash-mul", k))
        object.__setattr__(self, "_band_mul", _seed(f"{self.prefix}band-mul", self.rows))

    def minhash(self, hashes: np.ndarray) -> np.ndarray | None:
        """``bands * rows`` uint32 values of a set of item hashes, or None for an empty set."""
        if hashes.size == 0:
            return None
        h = np.asarray(hashes, dtype=np.uint64)[:, None]
        with np.errstate(over="ignore"):
            mixed = ((h ^ self._xor[None, :]) * self._mul[None, :]) >> np.uint64(32)
        out: np.ndarray = mixed.min(axis=0).astype(np.uint32)
        return out

    def band_keys(self, mh: np.ndarray | None) -> list[int]:
        """One signed 64-bit key per band (the band's number is mixed in)."""
        if mh is None:
            return []
        rows = mh.astype(np.uint64).reshape(self.bands, self.rows)
        numbers = np.arange(self.band_base + 1, self.band_base + self.bands + 1,
                            dtype=np.uint64)
        with np.errstate(over="ignore"):
            acc = numbers * np.uint64(0x9E3779B97F4A7C15)
            for j in range(self.rows):
                acc = (acc ^ rows[:, j]) * self._band_mul[j]
                acc ^= acc >> np.uint64(29)
        return [int(v) for v in acc.view(np.int64)]

    def keys(self, hashes: np.ndarray) -> list[int]:
        return self.band_keys(self.minhash(hashes))
