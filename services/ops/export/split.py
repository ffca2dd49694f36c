"""Which split (train, validation, test) each line goes to: the hash of its group, where a group
is every source file, speaker label (the voice within a file) and corpus speaker (the voice
across files, ``onsei speakers``) connected by a line (union-find). A source file, and a voice
wherever it appears, is then on one side only, and the choice depends only on the seed and the
group's smallest member, never on the order shards were read."""

from __future__ import annotations

import hashlib

TRAIN, VALIDATION, TEST = "train", "validation", "test"
SPLITS = (TRAIN, VALIDATION, TEST)


class Groups:
    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def add(self, node: str) -> None:
        self._parent.setdefault(node, node)

    def find(self, node: str) -> str:
        parent = self._parent
        root = parent.setdefault(node, node)
        while parent[root] != root:
            root = parent[root]
        while parent[node] != root:  # path compression
            parent[node], node = root, parent[node]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:  # the smaller name is the root: the same groups give the same roots
            lo, hi = (ra, rb) if ra < rb else (rb, ra)
            self._parent[hi] = lo

    def __len__(self) -> int:
        return len(self._parent)


def unit_hash(seed: int, name: str) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``name`` alone."""
    return int.from_bytes(hashlib.sha256(f"{seed}\0{name}".encode()).digest()[:8], "big") / 2**64


def side(group: str, seed: int, validation_fraction: float, test_fraction: float = 0.0) -> str:
    """Test below ``test_fraction``, validation in the next ``validation_fraction``: without a
    test split a group is where it always was."""
    h = unit_hash(seed, group)
    if h < test_fraction:
        return TEST
    return VALIDATION if h < test_fraction + validation_fraction else TRAIN


def file_node(shard_id: int, source_key: str) -> str:
    """A source file: its raw member key within its shard (a file lives in one shard)."""
    return f"file:{shard_id}:{source_key}"


def speaker_node(speaker_id: str) -> str:
    return f"speaker:{speaker_id}"


def corpus_speaker_node(corpus_speaker_id: str) -> str:
    return f"corpus_speaker:{corpus_speaker_id}"
