"""Speaker labels within one source file: its kept segments clustered by speaker embedding.

Each restored segment has a Resemblyzer embedding (``quality.speaker_embedding``, the normalised
mean of its voiced 1.6 s partials, ``quality.speaker_parts`` of them). A mean of few partials is
noisy: two segments of one voice agree less the shorter they are, and a fixed cosine threshold
splits the short pieces of one voice off. So the segments with at least ``MIN_PARTS`` partials
are clustered by the cosine between cluster centroids (each segment weighted by its partials)
*corrected for that noise*: if one partial of a voice is its mean plus independent noise, and
two partials of one voice agree ``agreement`` on average (0.7 for Resemblyzer), the centroid of
``w`` partials has an expected squared norm ``agreement + (1 - agreement) / w`` against the
voice's ``agreement``; the measured cosine of two centroids divided by what one voice would give
them estimates the cosine between the two voices themselves, and clusters are merged, the most
alike first, while it is at least the threshold. The number of speakers is not known; the
threshold is chosen on recordings with known speakers (docs/quality.md, speaker labels).

A segment with fewer partials (about 2.5 s of speech or less) is too noisy, and carries too
much of its own shortness (short segments of two voices can agree more than with their own
voices' long ones), to found or chain clusters: it then joins the cluster whose centroid is
nearest, if their cosine is at least ``JOIN_NEAREST`` when there are two clusters or more (a
short turn is nearer its own voice than the other's), or ``JOIN`` when there is only one (with
nothing to compare, a short turn of another voice sharing the file's noise and restoration can
reach 0.72 to it). A short segment with a voiced partial joins no cluster, though, when another
such short segment is nearer to it than the cluster's centroid by more than ``PEER_MARGIN``:
that is a voice heard only in short turns (a telephone file's long turns of one voice can end
up as two clusters, and the other voice's turns would join the nearer). The short ones left over
are grouped among themselves (average linkage at ``SHORT_THRESHOLD``): such a voice still gets
one label. With no long segment, all are clustered alike.

A group left over with no voiced partial at all (under ~0.8 s of speech in any 1.6 s window)
says little about its voice: a 0.4 s turn of one voice came out nearer its file's other voice,
by the centroids and by crops of both voices as short as itself. It gets no label (``None``:
voice unknown) when it lies among the file's known voices: there are two labels or more (the
clusters and the short voiced groups) and its centroid's cosine to the nearest is at least
``UNKNOWN_NEAR``; a label of its own would split its voice in two. With one label it keeps a
label of its own: the other voice of a two-voice file may be heard in that one short turn, and
such a turn of a new voice (0.65-0.73 to the one known) comes out as near it as a turn of a
known voice does among two (0.495-0.70 to the nearest): no cosine bound alone tells them apart
(``UNKNOWN_NEAR`` only keeps a label for a turn far from every known voice). Labels are
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

if TYPE_CHECKING:
    from services.enhance.quality.records import QualityRecord

DEFAULT_THRESHOLD = 0.88  # corrected centroid cosine; docs/quality.md has how it was chosen
AGREEMENT = 0.7  # mean cosine between two 1.6 s partials of one voice (Resemblyzer)
JOIN = 0.8  # cosine to the only cluster's centroid at which a short segment joins it
JOIN_NEAREST = 0.6  # the same to the nearest of two clusters or more
PEER_MARGIN = 0.1  # how much nearer another short segment keeps a short one out of a cluster
SHORT_THRESHOLD = 0.7  # mean pairwise cosine grouping the short segments that join no cluster
MIN_PARTS = 2  # voiced 1.6 s partials for a segment to take part in the clustering itself
UNKNOWN_NEAR = 0.4  # cosine to the nearest of two labels or more: an unvoiced group gets none
UNKNOWN = -1  # a segment's raw cluster when it gets no label


def cluster(embeddings: list[np.ndarray], threshold: float = DEFAULT_THRESHOLD,
            parts: list[int] | None = None, min_parts: int = MIN_PARTS, join: float = JOIN,
            join_nearest: float = JOIN_NEAREST, peer_margin: float = PEER_MARGIN,
            short_threshold: float = SHORT_THRESHOLD, agreement: float = AGREEMENT,
            unknown_near: float = UNKNOWN_NEAR) -> list[int | None]:
    """Cluster numbers (0, 1, ... by first appearance) for ``embeddings`` (module docstring);
    ``None`` for an unvoiced short segment whose voice is not known (above 1: never).

    ``parts``: voiced partials behind each embedding (None: all count as ``min_parts``; a
    segment with none, its embedding taken over its quiet partials, counts as one)."""
    n = len(embeddings)
    if n == 0:
        return []
    x = _unit(np.stack([np.asarray(e, np.float64) for e in embeddings]))
    weight = np.full(n, float(min_parts)) if parts is None else np.maximum(
        np.asarray(parts, np.float64), 1.0)
    long = weight >= min_parts
    if not long.any():
        long[:] = True
    raw = np.zeros(n, int)
    raw[long] = _merge_centroids(x[long], weight[long], threshold, agreement)
    short = np.flatnonzero(~long)
    if short.size:
        ids = np.unique(raw[long])
        sums = x[long] * weight[long, None]
        cents = _unit(np.stack([sums[raw[long] == c].sum(axis=0) for c in ids]))
        sims = x[short] @ cents.T
        near = sims.argmax(axis=1)
        best = sims[np.arange(short.size), near]
        joins = best >= (join if ids.size == 1 else join_nearest)
        voiced = np.asarray(parts if parts is not None else weight)[short] >= 1
        peers = x[short] @ x[short[voiced]].T
        peers[np.flatnonzero(voiced), np.arange(voiced.sum())] = -np.inf  # not itself
        if peers.size:
            joins &= ~(voiced & (peers.max(axis=1) > best + peer_margin))
        raw[short[joins]] = ids[near[joins]]
        rest = short[~joins]
        if rest.size:
            raw[rest] = _agglomerate(x[rest], short_threshold) + ids.max() + 1
            _withhold_unknown(raw, x, weight, rest[~voiced[~joins]], unknown_near)
    first: dict[int, int] = {}
    return [None if c == UNKNOWN else first.setdefault(int(c), len(first)) for c in raw]


def _withhold_unknown(raw: np.ndarray, x: np.ndarray, weight: np.ndarray, unvoiced: np.ndarray,
                      near: float) -> None:
    """Set to ``UNKNOWN`` (in place) the groups of ``raw`` made only of ``unvoiced`` segments
    that lie among two labels or more: their centroid's cosine to the nearest other group's
    (each segment weighted by its partials) at least ``near``."""
    groups = np.unique(raw)
    blind = np.array([np.isin(np.flatnonzero(raw == c), unvoiced).all() for c in groups])
    known = groups[~blind]
    if known.size < 2 or not blind.any():
        return
    cents = _unit(np.stack([(x[raw == c] * weight[raw == c, None]).sum(axis=0) for c in known]))
    for c in groups[blind]:
        mine = raw == c
        if float((_unit(x[mine].sum(axis=0)) @ cents.T).max()) >= near:
            raw[mine] = UNKNOWN


def _unit(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-9)
    return out


def _merge_centroids(x: np.ndarray, weight: np.ndarray, threshold: float,
                     agreement: float) -> np.ndarray:
    """Cluster representatives (a member's index) of unit rows ``x``: clusters merged, the most
    alike first, while the corrected cosine between their weighted sums is at least
    ``threshold``. The sums' Gram matrix is kept instead of the sums (a merge adds a row and a
    column), and only the merged cluster's row of similarities is recomputed: each merge costs
    one argmax over the matrix, so a 4 h member's ~2,000 segments take a few seconds at most."""
    n = len(x)
    label = np.arange(n)
    if n == 1:
        return label
    s = x * weight[:, None]
    gram = s @ s.T
    w = weight.copy()
    alive = np.ones(n, bool)

    def row(i: int) -> np.ndarray:
        spread = np.sqrt(agreement + (1 - agreement) / w)  # a centroid's norm for one voice
        norms = np.sqrt(np.maximum(np.diag(gram), 1e-18))
        out: np.ndarray = gram[i] / (norms[i] * norms) * (spread[i] * spread / agreement)
        out[~alive] = -np.inf
        out[i] = -np.inf
        return out

    sim = np.stack([row(i) for i in range(n)])
    while True:
        i, j = divmod(int(np.argmax(sim)), n)
        if sim[i, j] < threshold:
            return label
        gram[i] += gram[j]  # the row first: then the column adds gram[i, j] to gram[i, i] too
        gram[:, i] += gram[:, j]
        w[i] += w[j]
        alive[j] = False
        sim[j, :] = -np.inf
        sim[:, j] = -np.inf
        sim[i] = row(i)
        sim[:, i] = sim[i]
        label[label == j] = i


def _agglomerate(x: np.ndarray, threshold: float) -> np.ndarray:
    """Average-linkage clusters of unit rows ``x``, merged while the closest two clusters' mean
    pairwise cosine is at least ``threshold``. The similarity matrix is updated in place
    (Lance-Williams: the merged cluster's similarity to another is the size-weighted mean of its
    parts')."""
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


T = TypeVar("T")  # what the labeller holds for each segment (the labels step's: a ticket)
S = TypeVar("S")  # a held segment
M = TypeVar("M")  # its sidecar


@dataclass(frozen=True)
class LabelProfile:
    """:func:`cluster`'s values for one kind of embedding (docs/quality.md: how each was chosen
    on recordings with known speakers)."""

    threshold: float = DEFAULT_THRESHOLD
    agreement: float = AGREEMENT
    join: float = JOIN
    join_nearest: float = JOIN_NEAREST
    short_threshold: float = SHORT_THRESHOLD
    min_parts: int = MIN_PARTS

    def cluster(self, embeddings: list[np.ndarray], parts: list[int] | None = None,
                threshold: float | None = None,
                unknown_near: float = UNKNOWN_NEAR) -> list[int | None]:
        """:func:`cluster` with these values (``threshold``: this profile's unless given)."""
        return cluster(embeddings, self.threshold if threshold is None else threshold, parts,
                       self.min_parts, join=self.join, join_nearest=self.join_nearest,
                       short_threshold=self.short_threshold, agreement=self.agreement,
                       unknown_near=unknown_near)


RESEMBLYZER = LabelProfile()
# Resemblyzer's and CAM++'s embeddings side by side (:func:`fuse`): the cosines are the mean of
# the two models', which agree less than Resemblyzer's alone, on one voice as on two
FUSED = LabelProfile(threshold=0.82, agreement=0.6, join=0.6, join_nearest=0.4,
                     short_threshold=0.5)


def fuse(resemblyzer: np.ndarray, campplus: np.ndarray) -> np.ndarray:
    """One unit vector for two unit embeddings of a segment: its cosine to another such vector
    is the mean of the two models' cosines."""
    both = np.concatenate([np.asarray(resemblyzer, np.float32), np.asarray(campplus, np.float32)])
    out: np.ndarray = (both / np.sqrt(2.0)).astype(np.float32)
    return out


def label_embedding(quality: QualityRecord) -> np.ndarray:
    """What a segment is labelled by: its Resemblyzer embedding, joined with its CAM++ one
    (:func:`fuse`) when it has that (a ``QualityRecord``)."""
    cam = quality.speaker_embedding_campplus
    own: np.ndarray = quality.speaker_embedding
    return own if cam is None else fuse(own, cam)


class SpeakerLabeller(Generic[T]):
    """``put(source_key, embedding or None, item)`` in output order; ``emit(item, speaker_id)``
    is called for every item, a file's items once the file is complete (the next key, or
    ``flush()``). An item without an embedding (annotation failed or off) gets ``None`` and
    takes no part in the clustering."""

    def __init__(self, emit: Callable[[T, str | None], None], threshold: float | None = None,
                 unknown_near: float = UNKNOWN_NEAR, profile: LabelProfile = RESEMBLYZER) -> None:
        self.emit = emit
        self.profile = profile
        self.threshold = profile.threshold if threshold is None else threshold
        self.unknown_near = unknown_near
        self._key: str | None = None
        self._held: list[tuple[np.ndarray | None, int, T]] = []
        self.files = 0
        self.speakers = 0

    def put(self, source_key: str, embedding: np.ndarray | None, item: T,
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
            nums = self.profile.cluster([e for _, e, _ in have], [p for _, _, p in have],
                                        self.threshold, self.unknown_near)
            labels = {i: speaker_label(key, c) for (i, _, _), c in zip(have, nums)
                      if c is not None}
            self.files += 1
            self.speakers += len({c for c in nums if c is not None})
        for i, (_, _, item) in enumerate(held):
            self.emit(item, labels.get(i))


class HeldSegments(Generic[S, M]):
    """Encoded segments waiting for their file's labels: ``hold(seg, flac, meta) -> ticket``,
    ``take(ticket) -> (seg, flac, meta)``; the FLAC bytes spill to disk past ``max_memory``."""

    def __init__(self, max_memory: int = 8 << 20, directory: Path | None = None) -> None:
        self._spool = tempfile.SpooledTemporaryFile(  # noqa: SIM115 (close())
            max_size=max_memory, dir=None if directory is None else str(directory))
        self._items: dict[int, tuple[S, int, int, M]] = {}
        self._next = 0

    def hold(self, seg: S, flac: bytes, meta: M) -> int:
        if not self._items:  # nothing held: start the spool over
            self._spool.seek(0)
            self._spool.truncate()
        self._spool.seek(0, 2)
        self._items[self._next] = (seg, self._spool.tell(), len(flac), meta)
        self._spool.write(flac)
        self._next += 1
        return self._next - 1

    def take(self, ticket: int) -> tuple[S, bytes, M]:
        seg, at, n, meta = self._items.pop(ticket)
        self._spool.seek(at)
        return seg, self._spool.read(n), meta

    def close(self) -> None:
        self._spool.close()
