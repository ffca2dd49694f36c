"""Speaker labels within one source file: its kept segments clustered by speaker embedding.

Each restored segment has a Resemblyzer embedding (``quality.speaker_embedding``, the normalised
mean of its voiced partials; a segment too short to judge ``multi_speaker`` still has one). The
segments of one source file are clustered with average-linkage agglomerative clustering on
cosine distance, cut at ``1 - threshold``: the number of speakers is not known, the threshold
is (chosen on recordings with known speakers, docs/quality.md, speaker labels). Labels are
numbered by first appearance: ``<source key>#s0``, ``#s1``, ...

A source file lives in one raw shard and its segments reach the writer one after another, so
:class:`SpeakerLabeller` holds a file's encoded segments back until the next file starts (or
the shard ends), labels them, and lets them go in their order; it costs no global pass. The
held FLAC bytes (:class:`HeldSegments`) stay in memory up to 8 MiB (a few minutes of audio),
then spill to a temporary file beside the shard's output: a member may be up to 4 h long (the
member limit), ~400 MB of FLAC when all of it is kept, and a worker's memory must not grow with
it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_THRESHOLD = 0.8  # cosine similarity; docs/quality.md has how it was chosen
JOIN_MARGIN = 0.05  # a short segment joins a cluster this much below the threshold
MIN_PARTS = 2  # voiced 1.6 s partials for a segment to take part in the clustering itself


def cluster(embeddings: list[np.ndarray], threshold: float = DEFAULT_THRESHOLD,
            parts: list[int] | None = None, min_parts: int = MIN_PARTS,
            join: float | None = None) -> list[int]:
    """Cluster numbers (0, 1, ... by first appearance) for ``embeddings``.

    ``parts``: voiced partials behind each embedding. Segments with at least ``min_parts`` are
    clustered first; a shorter one (a 1.6 s partial or less: a noisy embedding) then joins the
    cluster whose centroid is nearest if their cosine is at least ``join`` (default
    ``threshold - JOIN_MARGIN``: one short embedding is noisier than a mean), so a short
    interjection neither founds a speaker of its own nor chains two speakers together; the short
    ones left over are clustered among themselves. With no long segment, all are clustered alike."""
    n = len(embeddings)
    if n == 0:
        return []
    x = np.stack([np.asarray(e, np.float64) for e in embeddings])
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
    long = np.ones(n, bool) if parts is None else np.array([p >= min_parts for p in parts])
    if not long.any():
        long[:] = True
    raw = np.zeros(n, int)
    raw[long] = _agglomerate(x[long], threshold)
    short = np.flatnonzero(~long)
    if short.size:
        ids = np.unique(raw[long])
        cents = np.stack([x[long][raw[long] == c].mean(axis=0) for c in ids])
        cents /= np.maximum(np.linalg.norm(cents, axis=1, keepdims=True), 1e-9)
        sims = x[short] @ cents.T
        near = sims.argmax(axis=1)
        joins = sims[np.arange(short.size), near] >= (threshold - JOIN_MARGIN
                                                      if join is None else join)
        raw[short[joins]] = ids[near[joins]]
        rest = short[~joins]
        if rest.size:
            raw[rest] = _agglomerate(x[rest], threshold) + ids.max() + 1
    first: dict[int, int] = {}
    return [first.setdefault(int(c), len(first)) for c in raw]


def _agglomerate(x: np.ndarray, threshold: float) -> np.ndarray:
    """Average-linkage clusters of unit rows ``x``, merged while the closest two clusters' mean
    pairwise cosine is at least ``threshold``. The similarity matrix is updated in place
    (Lance-Williams: the merged cluster's similarity to another is the size-weighted mean of its
    parts'); each merge costs one argmax over it, so a 4 h member's ~2,000 segments take a few
    seconds at most."""
    n = len(x)
    label = np.arange(n)
    if n == 1:
        return label
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    size = np.ones(n)
    while True:
        i, j = divmod(int(np.argmax(sim)), n)
        if sim[i, j] < threshold:
            return label
        merged = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i, :] = merged
        sim[:, i] = merged
        sim[j, :] = -np.inf
        sim[:, j] = -np.inf
        sim[i, i] = -np.inf
        size[i] += size[j]
        label[label == j] = i


def speaker_label(source_key: str, n: int) -> str:
    return f"{source_key}#s{n}"


class SpeakerLabeller:
    """``put(source_key, embedding or None, item)`` in output order; ``emit(item, speaker_id)``
    is called for every item, a file's items once the file is complete (the next key, or
    ``flush()``). An item without an embedding (annotation failed or off) gets ``None`` and
    takes no part in the clustering."""

    def __init__(self, emit: Callable[[Any, str | None], None],
                 threshold: float = DEFAULT_THRESHOLD) -> None:
        self.emit = emit
        self.threshold = threshold
        self._key: str | None = None
        self._held: list[tuple[np.ndarray | None, int, Any]] = []
        self.files = 0
        self.speakers = 0

    def put(self, source_key: str, embedding: np.ndarray | None, item: Any,
            parts: int | None = None) -> None:
        """``parts``: the voiced partials behind ``embedding`` (None: count it as long)."""
        if source_key != self._key:
            self.flush()
            self._key = source_key
        self._held.append((embedding, MIN_PARTS if parts is None else parts, item))

    def flush(self) -> None:
        held, key, self._held = self._held, self._key, []
        if not held or key is None:
            return
        have = [(i, e, parts) for i, (e, parts, _) in enumerate(held) if e is not None]
        labels: dict[int, str] = {}
        if have:
            nums = cluster([e for _, e, _ in have], self.threshold, [p for _, _, p in have])
            labels = {i: speaker_label(key, c) for (i, _, _), c in zip(have, nums)}
            self.files += 1
            self.speakers += max(nums) + 1
        for i, (_, _, item) in enumerate(held):
            self.emit(item, labels.get(i))


class HeldSegments:
    """Encoded segments waiting for their file's labels: ``hold(seg, flac, meta) -> ticket``,
    ``take(ticket) -> (seg, flac, meta)``; the FLAC bytes spill to disk past ``max_memory``."""

    def __init__(self, max_memory: int = 8 << 20, directory: Path | None = None) -> None:
        self._spool = tempfile.SpooledTemporaryFile(  # noqa: SIM115 (close())
            max_size=max_memory, dir=directory)
        self._items: dict[int, tuple[Any, int, int, Any]] = {}
        self._next = 0

    def hold(self, seg: Any, flac: bytes, meta: Any) -> int:
        if not self._items:  # nothing held: start the spool over
            self._spool.seek(0)
            self._spool.truncate()
        self._spool.seek(0, 2)
        self._items[self._next] = (seg, self._spool.tell(), len(flac), meta)
        self._spool.write(flac)
        self._next += 1
        return self._next - 1

    def take(self, ticket: int) -> tuple[Any, bytes, Any]:
        seg, at, n, meta = self._items.pop(ticket)
        self._spool.seek(at)
        return seg, self._spool.read(n), meta

    def close(self) -> None:
        self._spool.close()
