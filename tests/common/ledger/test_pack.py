"""The columnar form of trimmed done records (common/ledger/pack.py)."""

from __future__ import annotations

import json

from common.ledger.pack import FIELDS, dumps, pack, trim, unpack


def test_round_trip_shares_node_blocks_and_keeps_absent_fields_absent() -> None:
    node = {"type": "L4", "price_per_hour": 0.3}
    recs = {
        3: ("t3", trim({"shard_id": 3, "wall_seconds": 2.5, "host": "a", "node": dict(node),
                        "counts": {"big": 1}})),
        1: ("t1", trim({"shard_id": 1, "finished_at": 10, "node": dict(node)})),
        2: ("t2", trim({"shard_id": 2, "wall_seconds": True, "audio_seconds_in": "9"})),
    }
    data = json.loads(dumps(pack(recs)))
    assert data["ids"] == [1, 2, 3] and len(data["nodes"]) == 1  # one block, written once
    back = unpack(data)
    assert back == recs and set(back[3][1]) == set(FIELDS)
    assert back[2][1]["wall_seconds"] is None and back[2][1]["audio_seconds_in"] is None
    assert back[1][1]["node"] is back[3][1]["node"]


def test_anything_malformed_is_none() -> None:
    good = json.loads(dumps(pack({1: ("t", trim({"shard_id": 1, "wall_seconds": 1.0}))})))
    assert unpack(good) is not None
    for bad in ({"ids": [1]}, [good], {**good, "tags": []}, {**good, "ids": ["1"]},
                {**good, "node": [0]}, {**good, "columns": {**good["columns"], "host": [7]}}):
        assert unpack(bad) is None
