"""The export's stderr lines for what the screen removed (the card has the tables)."""

from __future__ import annotations

from collections import Counter, defaultdict

from services.ops.export.source import ShardRead
from services.ops.provenance.screen import LICENCE, TAKEDOWN, TEST_SET, Screen


def stderr_lines(reads: list[ShardRead], screen: Screen | None) -> list[str]:
    if screen is None:
        return []
    n: Counter[str] = Counter()
    sec: dict[str, float] = defaultdict(float)
    for r in reads:
        for kind, count in r.removed.items():
            for prefix, what in ((LICENCE, "--licences"), (TAKEDOWN, "takedowns"),
                                 (TEST_SET, "--exclude-test-sets")):
                if kind.startswith(prefix):
                    n[what] += count
                    sec[what] += r.removed_seconds[kind]
    out = [f"{what}: {k} segments removed ({sec[what] / 3600:.3f} h)"
           for what, k in sorted(n.items())]
    if screen.requests:
        out.append(f"{len(screen.requests)} takedown requests applied (the card's Takedowns)")
    for shard, why in sorted(screen.not_scrubbed.items()):
        out.append(f"shard {shard} not scrubbed against the test sets: {why}")
    return out
