"""Linking file speakers to corpus speakers: the rule, on arrays (no store, no files).

The unit is a file speaker: one voice within one source file as the enhance stage labelled it
(``speaker_id``), its embedding the mean of its segments'. A batch of them, in corpus order
(shard, then first appearance in the file), is linked in two steps:

1. each is searched in the index of corpus speakers (their centroids): the nearest at a cosine
   of at least ``threshold`` is its speaker;
2. the rest found new speakers among themselves, in order: each joins the first-founded new
   speaker of this batch whose founder is at least ``threshold`` from it, else founds one.
   They are compared in blocks (one matrix product per block), so a batch of n new voices
   costs n x founders dot products on BLAS, not n index round trips.

Then :func:`apply` moves the centroids: a speaker's centroid is the weighted mean of its file
speakers' means (weight ``min(segments, WEIGHT_CAP)``: a long file counts more than a single
line, not a thousand times more). A file speaker's link is never revisited: labels given stay.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.speakers.index import SpeakerIndex

WEIGHT_CAP = 8.0
BLOCK = 1024


@dataclass(frozen=True)
class Links:
    """``speaker``: the corpus speaker number of each file speaker; ``new``: how many of the
    numbers were founded by this batch (the last ones: ``len(index)`` on)."""

    speaker: np.ndarray
    new: int


def weights(segments: np.ndarray) -> np.ndarray:
    return np.minimum(np.asarray(segments, np.float32), WEIGHT_CAP)


def link(means: np.ndarray, index: SpeakerIndex, threshold: float, k: int) -> Links:
    """``means``: one unit row per file speaker, in corpus order."""
    n = len(means)
    out = np.full(n, -1, np.int64)
    keys, sims = index.nearest(means, k)
    if n:
        best = sims.argmax(axis=1)
        hit = sims[np.arange(n), best] >= threshold
        out[hit] = keys[np.arange(n), best][hit]
    rest = np.flatnonzero(out < 0)
    founders: list[int] = []  # rows of ``means``, in founding order
    for start in range(0, rest.size, BLOCK):
        block = rest[start:start + BLOCK]
        x = means[block]
        before = x @ means[founders].T if founders else np.zeros((len(block), 0), np.float32)
        inner = x @ x.T
        here: list[int] = []  # positions in ``block`` founded in it
        for j, row in enumerate(block):
            cand = np.concatenate([before[j], inner[j, here]]) if here else before[j]
            over = np.flatnonzero(cand >= threshold)
            if over.size:
                f = int(over[0])  # the first founded: labels do not depend on later ones
                out[row] = out[founders[f]] if f < len(founders) else out[block[here[
                    f - len(founders)]]]
            else:
                out[row] = len(index) + len(founders) + len(here)
                here.append(j)
        founders += [int(block[j]) for j in here]
    return Links(out, len(founders))


def apply(index: SpeakerIndex, means: np.ndarray, segments: np.ndarray, links: Links) -> None:
    """Move the centroids of the speakers ``links`` names and add the new ones, in one pass
    the rebuild from the parts replays exactly."""
    w = weights(segments)
    spk = links.speaker
    if spk.size == 0:
        return
    uniq, inv = np.unique(spk, return_inverse=True)
    sums = np.zeros((uniq.size, means.shape[1]), np.float64)
    np.add.at(sums, inv, means.astype(np.float64) * w[:, None])
    wsum = np.bincount(inv, weights=w, minlength=uniq.size)
    old = uniq < len(index)
    if old.any():
        ok = uniq[old]
        prev_w = index.weights[ok].astype(np.float64)
        prev = index.centroids(ok).astype(np.float64)
        prev /= np.maximum(np.linalg.norm(prev, axis=1, keepdims=True), 1e-12)
        merged = (prev * prev_w[:, None] + sums[old]) / (prev_w + wsum[old])[:, None]
        index.replace(ok, merged.astype(np.float32), (prev_w + wsum[old]).astype(np.float32))
    new = ~old
    if new.any():
        if not np.array_equal(uniq[new], np.arange(len(index), len(index) + int(new.sum()))):
            raise ValueError("new speakers must be numbered on from the index's size")
        index.add((sums[new] / wsum[new][:, None]).astype(np.float32),
                  wsum[new].astype(np.float32))


def confidence(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Cosine of each segment's embedding to its corpus speaker's centroid, in [0, 1]."""
    c = centroids / np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
    out: np.ndarray = np.clip(np.einsum("ij,ij->i", vectors, c), 0.0, 1.0)
    return out
