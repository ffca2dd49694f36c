"""Which side (train or validation) each line goes to: the hash of its group, where a group
is every source file and speaker label connected by a line (union-find). A source file, and a
speaker label wherever it appears, is then on one side only, and the choice depends only on the
seed and the group's smallest member, never on the order shards were read."""

from __future__ import annotations

import hashlib

TRAIN, VALIDATION = "train", "validation"


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


def side(group: str, seed: int, validation_fraction: float) -> str:
    h = int.from_bytes(hashlib.sha256(f"{seed}\0{group}".encode()).digest()[:8], "big")
    return VALIDATION if h / 2**64 < validation_fraction else TRAIN


def file_node(shard_id: int, source_key: str) -> str:
    """A source file: its raw member key within its shard (a file lives in one shard)."""
    return f"file:{shard_id}:{source_key}"


def speaker_node(speaker_id: str) -> str:
    return f"speaker:{speaker_id}"
