"""GPU-hours, cost per output hour and the projection to finish, from done records.

Shared by ``onsei status``, ``onsei report`` and ``onsei fleet --suggest`` (docs/operations.md,
"Cost"). Each record is priced with the node block it carries (common/node/price.py); records
without one (written before it existed) are priced with this process's settings.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from common.ledger.pack import Trimmed
from common.node.price import Node, charge, node_of
from common.settings import Settings
from services.stages import STAGES


@dataclass
class StageCost:
    stage: str
    done: int = 0
    node_hours: float = 0.0
    gpu_hours: float = 0.0
    cost: float = 0.0
    unpriced: int = 0  # records whose node had no known price
    hours_out: float = 0.0
    last_hour: int = 0  # shards finished in the last hour
    first_start: float | None = None
    last_finish: float | None = None
    node_types: tuple[str, ...] = ()

    def add(self, recs: list[Trimmed], node: Node, now: float) -> None:
        """Records that ran on ``node``: charged at once (a share of a node is linear in its
        wall time), 50,000 records in one pass of plain sums."""
        if not recs:
            return
        walls = [r.wall_seconds or 0.0 for r in recs]
        node_h, gpu_h, cost = charge(node, sum(walls))
        self.done += len(recs)
        self.node_hours += node_h
        self.gpu_hours += gpu_h
        if cost is None:
            self.unpriced += len(recs)
        else:
            self.cost += cost
        self.hours_out += sum(r.audio_seconds_out or 0.0 for r in recs) / 3600
        fins = [(f, w) for r, w in zip(recs, walls)
                if (f := r.finished_at) is not None]
        if fins:
            self.last_hour += sum(1 for f, _ in fins if f >= now - 3600)
            start = min(f - w for f, w in fins)
            finish = max(f for f, _ in fins)
            self.first_start = start if self.first_start is None else min(self.first_start,
                                                                          start)
            self.last_finish = finish if self.last_finish is None else max(self.last_finish,
                                                                           finish)
        if node.type not in self.node_types:
            self.node_types += (node.type,)

    @property
    def node_seconds_per_shard(self) -> float | None:
        """One node's seconds per shard: what sizing balances (common/node/price.py)."""
        return 3600 * self.node_hours / self.done if self.done else None

    @property
    def shards_per_hour(self) -> float | None:
        """The fleet's current rate: shards in the last hour, else over the whole span."""
        if self.last_hour:
            return float(self.last_hour)
        if self.done and self.first_start is not None and self.last_finish is not None:
            span = self.last_finish - self.first_start
            return self.done * 3600 / span if span > 0 else None
        return None

    @property
    def priced(self) -> bool:
        return self.done > 0 and self.unpriced == 0

    def to_json(self) -> dict[str, Any]:
        return {"done": self.done, "node_hours": round(self.node_hours, 4),
                "gpu_hours": round(self.gpu_hours, 4),
                "cost": round(self.cost, 4) if self.priced else None,
                "unpriced_shards": self.unpriced, "hours_out": round(self.hours_out, 4),
                "cost_per_output_hour": _div(self.cost, self.hours_out) if self.priced
                else None,
                "node_seconds_per_shard": _round(self.node_seconds_per_shard),
                "shards_per_hour": _round(self.shards_per_hour),
                "node_types": list(self.node_types)}


def _div(a: float, b: float) -> float | None:
    return round(a / b, 4) if b > 0 else None


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def stage_costs(records: Mapping[str, Iterable[Trimmed]], settings: Settings,
                now: float | None = None) -> dict[str, StageCost]:
    now = time.time() if now is None else now
    fallback = node_of(settings, detect=False)  # this machine is not the one that worked
    out = {}
    for stage in STAGES:
        sc = StageCost(stage)
        # records read from the caches share their node blocks: one group per block object
        groups: dict[int, tuple[Any, list[Trimmed]]] = {}
        for rec in records.get(stage, ()):
            block = rec.node
            groups.setdefault(id(block), (block, []))[1].append(rec)
        for block, recs in groups.values():
            sc.add(recs, Node.from_record(block, fallback), now)
        out[stage] = sc
    return out


def projection(costs: dict[str, StageCost], total_shards: int) -> dict[str, Any]:
    """Per stage: shards left, hours left at the current rate, cost to finish at the mean
    cost per shard so far. The stages run side by side: the slowest bounds the whole."""
    stages: dict[str, Any] = {}
    for s, c in costs.items():
        left = max(0, total_shards - c.done)
        rate = c.shards_per_hour
        stages[s] = {
            "shards_left": left,
            "hours_left": round(left / rate, 3) if rate else (0.0 if not left else None),
            "cost_to_finish": round(left * c.cost / c.done, 2) if c.priced else (
                0.0 if not left else None),
        }
    hours = [v["hours_left"] for v in stages.values()]
    money = [v["cost_to_finish"] for v in stages.values()]
    return {"total_shards": total_shards, "stages": stages,
            "hours_left": None if None in hours else max(hours, default=0.0),
            "cost_to_finish": None if None in money else round(sum(money), 2)}


def summary(records: Mapping[str, Iterable[Trimmed]], settings: Settings,
            total_shards: int | None = None, now: float | None = None) -> dict[str, Any]:
    """The cost block of status / report: per stage, total, and (given the range's size)
    the projection. Output hours of the pipeline: those of its last stage (``until``)."""
    costs = stage_costs(records, settings, now)
    final = costs[settings.until or STAGES[-1]]
    priced = all(c.priced or c.done == 0 for c in costs.values()) and any(
        c.done for c in costs.values())
    cost = sum(c.cost for c in costs.values())
    return {
        "stages": {s: c.to_json() for s, c in costs.items()},
        "total": {"gpu_hours": round(sum(c.gpu_hours for c in costs.values()), 4),
                  "cost": round(cost, 4) if priced else None,
                  "output_hours": round(final.hours_out, 4),
                  "cost_per_output_hour": _div(cost, final.hours_out) if priced else None},
        "projection": None if total_shards is None else projection(costs, total_shards),
    }


def render_lines(block: dict[str, Any]) -> list[str]:
    """Plain-text lines for a terminal (status, report)."""
    def money(x: float | None) -> str:
        if x is None:
            return "?"
        return f"${x:,.2f}" if abs(x) >= 1 or x == 0 else f"${x:.3g}"  # $0.0123 per hour

    lines = ["cost          GPU-h        cost  $/output-h  node-s/shard  shards/h  nodes"]
    for s, c in block["stages"].items():
        lines.append(f"  {s:<9}{c['gpu_hours']:>9.1f} {money(c['cost']):>11} "
                     f"{money(c['cost_per_output_hour']):>11} "
                     f"{c['node_seconds_per_shard'] or 0:>13.2f} "
                     f"{c['shards_per_hour'] or 0:>9.1f}  {','.join(c['node_types']) or '-'}")
    t = block["total"]
    lines.append(f"  {'total':<9}{t['gpu_hours']:>9.1f} {money(t['cost']):>11} "
                 f"{money(t['cost_per_output_hour']):>11}   ({t['output_hours']:.2f} output h)")
    p = block.get("projection")
    if p:
        hl = "?" if p["hours_left"] is None else f"{p['hours_left']:.1f} h"
        per = ", ".join(f"{s} {v['shards_left']} left" for s, v in p["stages"].items())
        lines.append(f"to finish {p['total_shards']} shards: {hl} at the current rate, "
                     f"{money(p['cost_to_finish'])} more ({per})")
    if any(c["unpriced_shards"] for c in block["stages"].values()):
        lines.append("some shards ran on a node without a known price: set ONSEI_NODE_TYPE "
                     "or ONSEI_NODE_PRICE_PER_HOUR on the workers (docs/operations.md)")
    return lines
