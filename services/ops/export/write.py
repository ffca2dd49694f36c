"""Staged lines -> ``<split>/part-NNNNN.jsonl`` for train, validation and (when asked) test.

A JSON loader that infers the schema from the first lines it reads (``datasets``' json
builder reads the first block of the first train file) fails on a later line whose field was
null or absent in all of those first lines. So the first train part starts with *witness*
lines: few train lines that together hold a value at every path any line of the export has.
They are real lines, moved (not copied) to the front; the rest keep shard order. A path only
validation or test lines have moves one group to train (the card counts them). The caps on
hours per speaker and per source (caps.py) then leave lines out. publish.py publishes the
parts whole.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from services.ops.export.caps import Capped, Caps, apply_caps
from services.ops.export.source import ShardRead, staged
from services.ops.export.split import SPLITS, TRAIN, Groups, side

PART_BYTES = 256 * 1024 * 1024  # a part file is closed past this size
GIANT = 0.5  # share of the hours in one group past which the export warns (group_warning)


@dataclass
class Written:
    files: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    lines: Counter[str] = field(default_factory=Counter)  # split -> lines
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # per split
    languages: dict[str, dict[str, float]] = field(  # split -> language -> seconds
        default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    groups: Counter[str] = field(default_factory=Counter)  # split -> groups written
    moved_to_train: list[str] = field(default_factory=list)  # groups moved for a witness
    # speaker (corpus speaker, else the label within a file; "" none) -> seconds, all splits
    speaker_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    speaker_lines: Counter[str] = field(default_factory=Counter)  # speaker -> lines
    speakers: dict[str, set[str]] = field(  # split -> its speakers
        default_factory=lambda: defaultdict(set))
    # group (its smallest member) -> seconds written: one group holding most of the hours
    # (files and voices chained together) puts them all in one split, whatever the fractions
    group_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    group_split: dict[str, str] = field(default_factory=dict)
    capped: Capped = field(default_factory=Capped)

    def largest_group(self) -> tuple[str, float, str] | None:
        """(group, seconds, split) of the group with the most hours (the first by name on a
        tie), None when nothing was written."""
        if not self.group_seconds:
            return None
        g = min(self.group_seconds, key=lambda k: (-self.group_seconds[k], k))
        return g, self.group_seconds[g], self.group_split[g]


@dataclass(frozen=True)
class SplitPlan:
    """How lines are shared among the splits: the hash seed, the fractions of groups in
    validation and test, and the caps on hours per speaker and per source."""
    seed: int = 0
    validation_fraction: float = 0.01
    test_fraction: float = 0.0
    caps: Caps = field(default_factory=Caps)

    def problem(self) -> str | None:
        v, t = self.validation_fraction, self.test_fraction
        if not 0 <= v < 1:
            return (f"--validation-fraction {v}: between 0 and 1 (1 excluded: the train split "
                    "cannot be empty)")
        if not 0 <= t < 1:
            return f"--test-fraction {t}: between 0 and 1 (1 excluded)"
        if v + t >= 1:
            return (f"--validation-fraction {v} + --test-fraction {t} = {v + t:g}: below 1 "
                    "(the train split cannot be empty)")
        return self.caps.problem()


def group_warning(w: Written, plan: SplitPlan) -> str | None:
    """A line when one group holds over ``GIANT`` of the hours while a split other than train
    was asked for: that group's split then takes most of the export whatever the fractions
    (files with several voices, and voices in several files, chain into one group)."""
    big = w.largest_group()
    total = sum(w.seconds.values())
    if big is None or not (plan.validation_fraction or plan.test_fraction):
        return None
    group, seconds, split = big
    if seconds <= GIANT * total:
        return None
    return (f"one group (the files and voices sharing lines with {group}) holds "
            f"{100 * seconds / total:.0f} % of the hours, all in {split}: the splits cannot "
            "follow the fractions asked")


class Parts:
    """One split's part files, each closed past ``max_bytes``."""

    def __init__(self, root: Path, split: str, max_bytes: int, written: Written) -> None:
        self.root, self.split, self.max_bytes, self.written = root, split, max_bytes, written
        self._fh: IO[str] | None = None
        self._bytes = 0

    def write(self, body: str) -> None:
        if self._fh is None:
            name = f"{self.split}/part-{len(self.written.files[self.split]):05d}.jsonl"
            (self.root / self.split).mkdir(parents=True, exist_ok=True)
            self._fh = open(self.root / name, "w", encoding="utf-8")  # noqa: SIM115
            self.written.files[self.split].append(name)
            self._bytes = 0
        self._fh.write(body)
        self._bytes += len(body)
        if self._bytes >= self.max_bytes:
            self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _occurrences(reads: list[ShardRead], side_of: dict[str, str], groups: Groups,
                 split: str) -> dict[str, tuple[int, int, str]]:
    """Path set -> its first line on ``split``: (read index, line index, group root)."""
    at: dict[str, tuple[int, int, str]] = {}
    for k, r in enumerate(reads):
        for ps, nodes in r.first.items():
            for node, line in nodes.items():
                root = groups.find(node)
                if side_of[root] == split and (k, line) < at.get(ps, (len(reads), 0, ""))[:2]:
                    at[ps] = (k, line, root)
    return at


def _witnesses(reads: list[ShardRead], side_of: dict[str, str], groups: Groups,
               written: Written) -> set[tuple[int, int]]:
    """(read index, line index) of the witness lines, chosen greedily. A path that only
    validation or test lines hold moves the group of its first such line to train (recorded in
    ``written.moved_to_train``): still one side per group, and still decided by the data."""
    while True:
        train_at = _occurrences(reads, side_of, groups, TRAIN)
        in_train = {p for ps, (k, _, _) in train_at.items() for p in reads[k].pathsets[ps]}
        lacking = [(at, ps) for split in SPLITS[1:]
                   for ps, at in _occurrences(reads, side_of, groups, split).items()
                   if not set(reads[at[0]].pathsets[ps]) <= in_train]
        if not lacking:
            break
        (_, _, root), _ = min(lacking)
        side_of[root] = TRAIN
        written.moved_to_train.append(root)
    pathsets = {ps: set(reads[k].pathsets[ps]) for ps, (k, _, _) in train_at.items()}
    covered: set[str] = set()
    chosen: set[tuple[int, int]] = set()
    while True:
        best = max(sorted(pathsets, key=lambda p: train_at[p]),
                   key=lambda p: len(pathsets[p] - covered), default=None)
        if best is None or not pathsets[best] - covered:
            return chosen
        covered |= pathsets[best]
        chosen.add(train_at[best][:2])


def _sides(reads: list[ShardRead], plan: SplitPlan) -> tuple[Groups, dict[str, str]]:
    groups = Groups()
    for r in reads:
        for a, b in sorted(r.edges):
            groups.union(a, b)
        for node in r.nodes:
            groups.add(node)
    side_of: dict[str, str] = {}
    for r in reads:
        for node in r.nodes:
            root = groups.find(node)
            if root not in side_of:
                side_of[root] = side(root, plan.seed, plan.validation_fraction,
                                     plan.test_fraction)
        r.nodes = []  # in the groups now: memory grows with the files, once
    return groups, side_of


def write_parts(reads: list[ShardRead], root: Path, plan: SplitPlan,
                max_bytes: int = PART_BYTES) -> Written:
    """Route every staged line of ``reads`` (in their order) into part files under ``root``."""
    written = Written()
    groups, side_of = _sides(reads, plan)
    witnesses = _witnesses(reads, side_of, groups, written)
    written.capped = apply_caps(reads, witnesses, plan.caps, plan.seed)
    parts = {s: Parts(root, s, max_bytes, written) for s in SPLITS}
    try:
        for k, i in sorted(witnesses):
            with open(reads[k].staged, encoding="utf-8", newline="\n") as f:
                for n, raw in enumerate(f):
                    if n == i:
                        _route(raw, parts, written, side_of.__getitem__, groups)  # train
                        break
        for k, r in enumerate(reads):
            if r.error is not None:
                continue
            with open(r.staged, encoding="utf-8", newline="\n") as f:
                for n, raw in enumerate(f):
                    if (k, n) not in witnesses and (k, n) not in written.capped.dropped:
                        _route(raw, parts, written, side_of.__getitem__, groups)
    finally:
        for p in parts.values():
            p.close()
    written.groups.update(written.group_split.values())  # groups with a line written
    return written


def _route(raw: str, parts: dict[str, Parts], written: Written, side_of: Callable[[str], str],
           groups: Groups) -> None:
    line = staged(raw)
    root = groups.find(line.node)
    s = side_of(root)
    parts[s].write(line.body)
    written.group_seconds[root] += line.seconds
    written.group_split[root] = s
    written.lines[s] += 1
    written.seconds[s] += line.seconds
    written.languages[s][line.language] += line.seconds
    written.speaker_seconds[line.speaker] += line.seconds
    written.speaker_lines[line.speaker] += 1
    written.speakers[s].add(line.speaker)
