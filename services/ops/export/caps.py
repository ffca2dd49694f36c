"""Hours per speaker and per source file, capped: a corpus where a few voices or a few long
recordings hold most of the hours trains a model on them. Which lines stay is deterministic:
the lines chosen as witnesses (write.py) first, then every other line in the order of the hash
of its id and the seed, each kept while its speaker and its source are both under their caps
with it. The caps are exact except where the witnesses alone pass one (a few lines): the sums
are whole microseconds, so a line that fills a cap to the microsecond is kept whatever order
floats would have rounded the sum in.

A line's speaker is its corpus speaker (``onsei speakers``) where known, else its speaker label
within its file; a line without either is capped by its source only. Choosing needs each line's
id, speaker, source and seconds held at once: about 150 bytes a line, only when a cap is set."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from services.ops.export.source import ShardRead, staged
from services.ops.export.split import unit_hash

SPEAKER, SOURCE = "max_hours_per_speaker", "max_hours_per_source"


@dataclass(frozen=True)
class Caps:
    hours_per_speaker: float | None = None
    hours_per_source: float | None = None

    def problem(self) -> str | None:
        for flag, v in (("--max-hours-per-speaker", self.hours_per_speaker),
                        ("--max-hours-per-source", self.hours_per_source)):
            if v is not None and not (math.isfinite(v) and v > 0):
                return f"{flag} {v}: a number of hours above 0"
        return None

    def __bool__(self) -> bool:
        return self.hours_per_speaker is not None or self.hours_per_source is not None

    def describe(self) -> dict[str, float]:
        return {k: v for k, v in ((SPEAKER, self.hours_per_speaker),
                                  (SOURCE, self.hours_per_source)) if v is not None}


@dataclass
class Capped:
    """Lines left out by a cap: (read index, line index) and, per cap, segments and seconds."""
    dropped: set[tuple[int, int]] = field(default_factory=set)
    segments: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def apply_caps(reads: list[ShardRead], witnesses: set[tuple[int, int]], caps: Caps,
               seed: int) -> Capped:
    out = Capped()
    if not caps:
        return out
    rows: list[tuple[float, int, int, str, str, int, float]] = []
    for k, r in enumerate(reads):
        if r.error is not None:
            continue
        with open(r.staged, encoding="utf-8", newline="\n") as f:
            for n, raw in enumerate(f):
                st = staged(raw)
                order = -1.0 if (k, n) in witnesses else unit_hash(seed, st.id)
                rows.append((order, k, n, st.speaker, st.node, _micro(st.seconds),
                             st.seconds))
    rows.sort()
    limit = {SPEAKER: _limit(caps.hours_per_speaker), SOURCE: _limit(caps.hours_per_source)}
    used: dict[str, dict[str, int]] = {SPEAKER: defaultdict(int), SOURCE: defaultdict(int)}
    for order, k, n, speaker, node, micro, seconds in rows:
        over = None
        for cap, who in ((SPEAKER, speaker), (SOURCE, node)):
            if who and used[cap][who] + micro > limit[cap] and order >= 0:
                over = cap
                break
        if over is not None:
            out.dropped.add((k, n))
            out.segments[over] += 1
            out.seconds[over] += seconds
            continue
        if speaker:
            used[SPEAKER][speaker] += micro
        used[SOURCE][node] += micro
    return out


def _micro(seconds: float) -> int:
    return round(seconds * 1_000_000)


def _limit(hours: float | None) -> float:
    return math.inf if hours is None else _micro(hours * 3600.0)
