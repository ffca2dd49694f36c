"""What a node costs, and what one shard's work cost on it (docs/operations.md, "Cost").

Every done record carries a ``node`` block: the node type, spot or on-demand, the price per
node-hour in force, GPUs per node and how many shards the node works on at once. A shard is
charged ``wall_seconds / parallel_shards`` of its node: the share of the node it held. Idle
time, model loading and preempted work are not in any record, so the bill is at least this;
the ratio of the two is the fleet's utilization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.settings import Settings

# USD per GPU-hour for a one-GPU share of a typical instance (CPU and RAM included), rounded:
# (on-demand, spot). Indicative list prices from AWS us-east-1 / GCP us-central1 and common GPU
# clouds; spot varies by the hour and region. Set ONSEI_NODE_PRICE_PER_HOUR for your own.
PRICES: dict[str, tuple[float, float]] = {
    "H200": (5.00, 2.50),
    "H100": (4.50, 2.00),
    "A100-80GB": (3.70, 1.50),
    "A100": (3.00, 1.20),
    "L40S": (1.86, 0.75),
    "L4": (0.80, 0.30),
    "A10G": (1.00, 0.40),
    "A10": (0.75, 0.35),
    "T4": (0.53, 0.20),
    "V100": (3.06, 0.92),
    "cpu": (0.36, 0.14),  # an 8-vCPU node (c7i.2xlarge-like), no GPU
}


def normalize_type(node_type: str) -> str:
    """``h100:8`` / ``H100-SXM`` -> ``H100``; unknown names are kept (without a ``:count``)."""
    name = node_type.split(":", 1)[0].strip()
    by_upper = {k.upper(): k for k in PRICES}
    if name.upper() in by_upper:
        return by_upper[name.upper()]
    for key in sorted(PRICES, key=len, reverse=True):  # H100-SXM -> H100, A100-80GB first
        if name.upper().startswith(key.upper()):
            return key
    return name


def table_price(node_type: str, pricing: str) -> float | None:
    """Per-GPU price per hour from :data:`PRICES` (None: a type the table does not know)."""
    row = PRICES.get(normalize_type(node_type))
    if row is None:
        return None
    return row[1] if pricing == "spot" else row[0]


@dataclass(frozen=True)
class Node:
    type: str
    pricing: str
    price_per_hour: float | None  # the whole node
    gpus: int
    parallel_shards: int
    type_from: str = "setting"  # or "nvidia-smi" (common/node/accelerator.py), "none": unknown

    def as_record(self) -> dict[str, Any]:
        return {"type": self.type, "pricing": self.pricing,
                "price_per_hour": self.price_per_hour, "gpus": self.gpus,
                "parallel_shards": self.parallel_shards, "type_from": self.type_from}

    @classmethod
    def from_record(cls, rec: dict[str, Any] | None, fallback: Node) -> Node:
        """The node a done record names; records written before it existed get ``fallback``."""
        if not isinstance(rec, dict):
            return fallback
        price = rec.get("price_per_hour")
        return cls(str(rec.get("type") or fallback.type), str(rec.get("pricing") or
                   fallback.pricing), float(price) if price is not None else
                   fallback.price_per_hour, max(0, int(rec.get("gpus", 1) or 0)),
                   max(1, int(rec.get("parallel_shards") or 1)))


def node_of(settings: Settings, detect: bool = True) -> Node:
    """This process's node, from settings (the price: the override, else the table x GPUs).
    Without ``ONSEI_NODE_TYPE`` the type is detected (common/node/accelerator.py) when ``detect``:
    a worker describing itself; a reader pricing old records passes False."""
    from common.node.accelerator import UNKNOWN
    from common.node.accelerator import detect as detect_type

    node_type, source = settings.node_type, "setting"
    if not node_type:
        node_type = detect_type() if detect else UNKNOWN
        source = "nvidia-smi" if node_type != UNKNOWN else "none"
    gpus = _gpus(settings, node_type, source, detect)
    price = settings.node_price_per_hour
    if price is None and node_type != UNKNOWN:
        per_gpu = table_price(node_type, settings.node_pricing)  # the cpu row: per node
        price = None if per_gpu is None else round(per_gpu * max(1, gpus), 4)
    parallel = settings.node_parallel_shards or max(1, settings.worker_concurrency) * max(1, gpus)
    return Node(normalize_type(node_type), settings.node_pricing, price, gpus, max(1, parallel),
                source)


def _gpus(settings: Settings, node_type: str, source: str, detect: bool) -> int:
    """The node's GPUs as its records say them: ``ONSEI_NODE_GPUS`` when set; none for ``cpu``;
    else the GPUs this machine has (common/node/accelerator.py: 0 on a machine without one),
    and for a type the operator declared that shows none here, or a reader of old records, the
    setting's default."""
    from common.node.accelerator import gpu_count

    if "node_gpus" in settings.model_fields_set:
        return settings.node_gpus
    if normalize_type(node_type) == "cpu":
        return 0
    if not detect:
        return settings.node_gpus
    found = gpu_count()
    return settings.node_gpus if found == 0 and source == "setting" else found


def charge(node: Node, wall_seconds: float) -> tuple[float, float, float | None]:
    """(node-hours, GPU-hours, cost) of ``wall_seconds`` of one shard on ``node``."""
    hours = wall_seconds / 3600 / node.parallel_shards
    gpu_hours = hours * (node.gpus if node.type != "cpu" else 0)
    return hours, gpu_hours, None if node.price_per_hour is None else hours * node.price_per_hour

