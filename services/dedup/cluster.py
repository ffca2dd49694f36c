"""From confirmed pairs to clusters, one copy kept in each.

Copies of one recording form a connected group of pairs (a re-encode of a re-encode still
joins its cluster). The copy kept is the one with the best DNSMOS OVRL after restoration
(none counts below any), ties by the earliest shard, then the segment id: the same choice
whatever order the pairs were found in.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.dedup.result import Cluster, DuplicateLine

KIND = "same_recording"


@dataclass(frozen=True)
class Member:
    id: str
    shard: int
    seconds: float
    ovrl: float | None
    text: str


def _find(parent: dict[int, int], x: int) -> int:
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:  # path compression
        parent[x], x = root, parent[x]
    return root


def components(edges: list[tuple[int, int, float]]) -> list[list[int]]:
    parent: dict[int, int] = {}
    for a, b, _ in edges:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = _find(parent, a), _find(parent, b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for x in parent:
        groups.setdefault(_find(parent, x), []).append(x)
    return list(groups.values())


def _rank(m: Member) -> tuple[float, int, str]:
    return (-(m.ovrl if m.ovrl is not None else float("-inf")), m.shard, m.id)


@dataclass
class Clustering:
    duplicates: list[DuplicateLine]
    clusters: list[Cluster]


def cluster(edges: list[tuple[int, int, float]], info: dict[int, Member]) -> Clustering:
    best: dict[int, float] = {}  # each segment's strongest pair
    for a, b, s in edges:
        best[a] = max(best.get(a, 0.0), s)
        best[b] = max(best.get(b, 0.0), s)
    dups: list[DuplicateLine] = []
    clusters: list[Cluster] = []
    for group in components(edges):
        members = [(info[g], g) for g in group if g in info]
        if len(members) < 2:
            continue
        members.sort(key=lambda mg: _rank(mg[0]))
        keep = members[0][0]
        for m, g in members[1:]:
            dups.append(DuplicateLine(id=m.id, duplicate_of=keep.id, kind=KIND,
                                      score=best[g], seconds=round(m.seconds, 3)))
        clusters.append(Cluster(keep=keep.id, size=len(members),
                                seconds=round(sum(m.seconds for m, _ in members), 3),
                                text=keep.text))
    dups.sort(key=lambda d: d.id)
    clusters.sort(key=lambda c: (-c.size, -c.seconds, c.keep))
    return Clustering(dups, clusters)
