"""Node prices and what one done record cost (common/node/price.py), and the node block the
engine writes into every done record."""

from __future__ import annotations

import pytest

from common.node.price import PRICES, Node, charge, node_of, normalize_type, table_price
from common.stages.engine import Engine
from fixtures.speechgen import make_shard
from services.stages import PIPELINE
from tests.dummy.stages import DummyAsr


def test_type_names_normalize_to_the_table() -> None:
    assert normalize_type("h100:8") == "H100"
    assert normalize_type("H100-SXM5") == "H100"
    assert normalize_type("A100-80GB") == "A100-80GB"  # not taken for A100
    assert normalize_type("a100") == "A100"
    assert normalize_type("MI300X") == "MI300X"  # unknown kept as is
    assert table_price("L4", "spot") == PRICES["L4"][1]
    assert table_price("L4", "on-demand") == PRICES["L4"][0]
    assert table_price("MI300X", "spot") is None
    for on_demand, spot in PRICES.values():
        assert 0 < spot < on_demand  # spot is the cheap one, in every row


def test_node_from_settings(make_settings) -> None:
    n = node_of(make_settings(node_type="H100:8", node_gpus=8, node_pricing="on-demand"))
    assert n.type == "H100" and n.gpus == 8 and n.parallel_shards == 8
    assert n.price_per_hour == pytest.approx(8 * PRICES["H100"][0])
    n = node_of(make_settings(node_type="L4", node_price_per_hour=0.5, worker_concurrency=2))
    assert n.price_per_hour == 0.5 and n.parallel_shards == 2  # override wins
    n = node_of(make_settings(node_type="mystery-gpu", node_parallel_shards=3))
    assert n.price_per_hour is None and n.parallel_shards == 3
    assert node_of(make_settings(), detect=False).type == "unknown"


def shard_usage(record: dict, fallback: Node) -> tuple[float, float, float | None]:
    return charge(Node.from_record(record.get("node"), fallback), record["wall_seconds"])


def test_a_shard_is_charged_its_share_of_the_node() -> None:
    fallback = Node("L4", "spot", 0.3, 1, 1)
    rec = {"wall_seconds": 3600.0,
           "node": {"type": "H100", "pricing": "spot", "price_per_hour": 8.0, "gpus": 4,
                    "parallel_shards": 4}}
    node_h, gpu_h, cost = shard_usage(rec, fallback)
    assert (node_h, gpu_h, cost) == (0.25, 1.0, 2.0)  # a quarter of a 4-GPU node for 1 h
    # a record from before the node block: priced with this process's node
    assert shard_usage({"wall_seconds": 7200.0}, fallback) == (2.0, 2.0, pytest.approx(0.6))
    cpu = {"wall_seconds": 3600.0, "node": {"type": "cpu", "price_per_hour": 0.1}}
    assert shard_usage(cpu, fallback) == (1.0, 0.0, 0.1)  # a CPU node uses no GPU-hours
    assert shard_usage({"wall_seconds": 10, "node": {"type": "x"}},
                       Node("x", "spot", None, 1, 1))[2] is None


def test_done_record_carries_the_node(make_settings, tmp_path) -> None:
    s = make_settings(node_type="A10G", node_pricing="on-demand", worker_concurrency=2)
    make_shard(tmp_path / "raw" / s.shard_name(0), {"a": {"wav": b"x" * 64}})
    rec = Engine(s, PIPELINE, DummyAsr).run(0).record
    assert rec.node == {"type": "A10G", "pricing": "on-demand",
                           "price_per_hour": PRICES["A10G"][0], "gpus": 1, "parallel_shards": 2,
                           "type_from": "setting"}
    assert rec.wall_seconds >= 0 and rec.audio_seconds_out == 2.0
