"""`onsei fleet --suggest`: node counts per stage that balance the stages' measured rates.

A shard passes every stage once, so the fleets keep pace when each stage's node count is
proportional to the node-seconds one shard costs it there (``wall / parallel shards`` in its
done records, common/node/price.py). With asr at 5 node-s per shard and tokenize at 1, 60 nodes
split 50 : 10, the seed's ratio. Done records are sampled (a few thousand per stage give the
mean within a percent or so), so the suggestion costs seconds, not a full ledger read.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import partial

from common.ledger.pack import Trimmed, trim
from common.ledger.records import DoneRecord, RecordError
from common.ledger.store import Ledger
from common.settings import Settings
from services.stages import STAGES, open_ledger

SAMPLE = 2000


@dataclass(frozen=True)
class StageRate:
    stage: str
    node_seconds_per_shard: float | None  # None: no done record yet
    price_per_node_hour: float | None = None  # mean over the sampled records


def balance(rates: list[StageRate], total: int) -> dict[str, int]:
    """Split ``total`` nodes over the measured stages in proportion to their node-seconds
    per shard (largest remainder), at least one each; unmeasured stages get none."""
    measured = [r for r in rates if r.node_seconds_per_shard]
    if not measured or total <= 0:
        return {r.stage: 0 for r in rates}
    total = max(total, len(measured))
    weight = sum(r.node_seconds_per_shard or 0.0 for r in measured)
    exact = {r.stage: total * (r.node_seconds_per_shard or 0.0) / weight
             for r in measured}
    out = {s: max(1, math.floor(x)) for s, x in exact.items()}
    while sum(out.values()) < total:  # the largest shortfall first
        out[max(exact, key=lambda s: exact[s] - out[s])] += 1
    while sum(out.values()) > total:  # the floor of one each overshot: trim the most over
        out[min((s for s in out if out[s] > 1), key=lambda s: exact[s] - out[s])] -= 1
    return {r.stage: out.get(r.stage, 0) for r in rates}


def pipeline_rate(rates: list[StageRate], nodes: dict[str, int]) -> float:
    """Shards per hour the whole pipeline sustains: its slowest stage's."""
    per = [nodes.get(r.stage, 0) * 3600 / r.node_seconds_per_shard
           for r in rates if r.node_seconds_per_shard]
    return min(per) if per else 0.0


def measured_rates(settings: Settings, sample: int = SAMPLE,
                   seed: int = 0) -> list[StageRate]:
    """Each stage's node-seconds per shard from (a sample of) its done records."""
    from concurrent.futures import ThreadPoolExecutor

    from services.ops.costs import stage_costs

    ledger = open_ledger(settings)
    rng = random.Random(seed)
    records: dict[str, list[Trimmed]] = {}
    for stage in STAGES:
        ids = sorted(ledger.done_ids(stage))
        picked = ids if len(ids) <= sample else rng.sample(ids, sample)
        with ThreadPoolExecutor(16) as pool:
            records[stage] = [trim(r) for r in pool.map(partial(_read, ledger, stage), picked)
                              if r is not None]
    costs = stage_costs(records, settings)
    out = []
    for stage in STAGES:
        c = costs[stage]
        price = c.cost / c.node_hours if c.priced and c.node_hours > 0 else None
        out.append(StageRate(stage, c.node_seconds_per_shard, price))
    return out


def _read(ledger: Ledger, stage: str, shard_id: int) -> DoneRecord | None:
    try:
        return ledger.read_done(stage, shard_id)
    except RecordError:
        return None  # corrupt: no figure to learn from


def render(rates: list[StageRate], nodes: dict[str, int],
           current: dict[str, int]) -> list[str]:
    lines = ["stage     node-s/shard  shards/h/node  now  suggested  $/h"]
    for r in rates:
        t = r.node_seconds_per_shard
        cost = (f"{nodes[r.stage] * r.price_per_node_hour:.2f}"
                if r.price_per_node_hour is not None else "?")
        lines.append(f"  {r.stage:<8}{t or 0:>12.2f}  {3600 / t if t else 0:>13.1f}  "
                     f"{current.get(r.stage, '-')!s:>3}  {nodes[r.stage]:>9}  {cost:>5}")
    now = pipeline_rate(rates, current)
    new = pipeline_rate(rates, nodes)
    lines.append(f"pipeline: {new:,.0f} shards/h suggested vs {now:,.0f} shards/h now "
                 "(the slowest stage sets the pace)")
    missing = [r.stage for r in rates if not r.node_seconds_per_shard]
    if missing:
        lines.append(f"no done records yet for {', '.join(missing)}: run a few shards there "
                     "first; they are left out of the split")
    return lines
