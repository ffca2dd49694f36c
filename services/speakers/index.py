"""The corpus speakers' centroids in an approximate nearest-neighbour index (usearch's HNSW,
cosine), keyed by speaker number; with each speaker's weight (how much of the corpus its
centroid averages).

A centroid is replaced when a file speaker joins it (usearch removes the old vector and adds
the new one under the same key). The index is a cache of the store: ``onsei speakers`` builds
it again from the published parts (services/speakers/parts.py) when its local copy does not
match them, replaying the same updates in the same order, so the rebuilt index is the one a
machine that never stopped would hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from services.speakers.embeddings import DIM

CONNECTIVITY = 16  # HNSW neighbours per node: usearch's default, recall ~0.99 at 1 M
EXPANSION_SEARCH = 64


class SpeakerIndex:
    def __init__(self, dtype: str = "bf16", threads: int = 0) -> None:
        from usearch.index import Index

        self.dtype = dtype
        self.threads = threads
        self._ix = Index(ndim=DIM, metric="cos", dtype=dtype, connectivity=CONNECTIVITY,
                         expansion_search=EXPANSION_SEARCH)
        self.weights = np.zeros(0, np.float32)  # by speaker number: 0 .. len - 1

    def __len__(self) -> int:
        return int(self.weights.size)

    @property
    def memory_bytes(self) -> int:
        return int(self._ix.memory_usage) + self.weights.nbytes

    def nearest(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """For each row of ``x`` (unit vectors): its ``k`` nearest speakers and their cosines,
        best first; a missing neighbour is key -1 with cosine -1."""
        n = len(x)
        keys = np.full((n, k), -1, np.int64)
        sims = np.full((n, k), -1.0, np.float32)
        if n == 0 or len(self) == 0:
            return keys, sims
        m = self._ix.search(np.ascontiguousarray(x, np.float32), min(k, len(self)),
                            threads=self.threads)
        got_k = np.asarray(m.keys).reshape(n, -1)
        got_d = np.asarray(m.distances).reshape(n, -1)
        # one query comes back as Matches (no counts: its keys are those found)
        counts = np.asarray(getattr(m, "counts", [got_k.shape[1]])).reshape(n)
        width = got_k.shape[1]
        valid = np.arange(width)[None, :] < counts[:, None]
        keys[:, :width] = np.where(valid, got_k.astype(np.int64), -1)
        sims[:, :width] = np.where(valid, 1.0 - got_d, -1.0)
        return keys, sims

    def centroids(self, keys: np.ndarray) -> np.ndarray:
        """The stored centroids of ``keys`` (float32, as the index holds them)."""
        if len(keys) == 0:
            return np.zeros((0, DIM), np.float32)
        got = self._ix.get(np.asarray(keys, np.uint64))
        return np.asarray(got, np.float32).reshape(len(keys), DIM)

    def add(self, vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """New speakers, numbered from ``len(self)`` on; returns their numbers."""
        keys = np.arange(len(self), len(self) + len(vectors), dtype=np.int64)
        if len(keys):
            self._ix.add(keys.astype(np.uint64), _unit(vectors), threads=self.threads)
            self.weights = np.concatenate([self.weights, np.asarray(weights, np.float32)])
        return keys

    def replace(self, keys: np.ndarray, vectors: np.ndarray, weights: np.ndarray) -> None:
        if len(keys) == 0:
            return
        k = np.asarray(keys, np.uint64)
        self._ix.remove(k)
        self._ix.add(k, _unit(vectors), threads=self.threads)
        self.weights[np.asarray(keys, np.int64)] = weights

    def save(self, directory: Path, parts: list[str]) -> None:
        """The index, its weights and the parts it holds (``manifest.json``, written last)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "manifest.json").unlink(missing_ok=True)
        self._ix.save(str(directory / "index.usearch"))
        np.save(directory / "weights.npy", self.weights)
        (directory / "manifest.json").write_text(json.dumps(
            {"parts": parts, "speakers": len(self), "dtype": self.dtype}))

    @classmethod
    def load(cls, directory: Path, dtype: str, threads: int) -> tuple[SpeakerIndex, list[str]]:
        """The saved index and the parts it holds; an empty one (no parts) when there is none
        or it does not read (the caller builds it again from the store)."""
        try:
            manifest = json.loads((directory / "manifest.json").read_text())
            if manifest["dtype"] != dtype:
                raise ValueError("another dtype")
            out = cls(dtype, threads)
            out._ix.load(str(directory / "index.usearch"))
            out.weights = np.load(directory / "weights.npy")
            if not len(out._ix) == len(out.weights) == manifest["speakers"]:
                raise ValueError("sizes differ")
            return out, list(manifest["parts"])
        except (OSError, ValueError, KeyError, RuntimeError):
            return cls(dtype, threads), []


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return np.ascontiguousarray(x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9))
