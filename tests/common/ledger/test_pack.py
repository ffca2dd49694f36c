"""The columnar form of trimmed done records (common/ledger/pack.py)."""

from __future__ import annotations

import json

import pytest

from common.ledger.pack import Trimmed, dumps, pack, trim, unpack
from common.ledger.records import DoneRecord


def _rec(**kw) -> DoneRecord:
    return DoneRecord.from_dict({"stage": "asr", "shard": f"s-{kw['shard_id']}", **kw})


def test_round_trip_shares_node_blocks_and_keeps_absent_fields_absent() -> None:
    node = {"type": "L4", "price_per_hour": 0.3}
    recs = {
        3: ("t3", trim(_rec(shard_id=3, wall_seconds=2.5, host="a", node=dict(node),
                            counts={"big": 1}))),
        1: ("t1", trim(_rec(shard_id=1, finished_at=10, node=dict(node)))),
        2: ("t2", trim(_rec(shard_id=2))),
    }
    data = json.loads(dumps(pack(recs)))
    assert data["ids"] == [1, 2, 3] and len(data["nodes"]) == 1  # one block, written once
    back = unpack(data)
    assert back == recs and isinstance(back[3][1], Trimmed)
    assert back[2][1].node is None and back[2][1].wall_seconds == 0.0
    assert back[1][1].node is back[3][1].node


def test_anything_malformed_is_none() -> None:
    good = json.loads(dumps(pack({1: ("t", trim(_rec(shard_id=1, wall_seconds=1.0)))})))
    assert unpack(good) is not None
    cols = good["columns"]
    for bad in ({"ids": [1]}, [good], {**good, "tags": []}, {**good, "ids": ["1"]},
                {**good, "node": [0]}, {**good, "columns": {**cols, "host": [7]}},
                {**good, "columns": {**cols, "wall_seconds": [-1.0]}}):
        assert unpack(bad) is None


def test_a_value_edited_in_place_fails_the_checksum() -> None:
    """Same size, same everything but one digit: the checksum of the columns catches it."""
    good = json.loads(dumps(pack({1: ("t", trim(_rec(shard_id=1, wall_seconds=1.0)))})))
    edited = {**good, "columns": {**good["columns"], "wall_seconds": [9.0]}}
    assert len(dumps(edited)) == len(dumps(good))
    assert unpack(edited) is None


@pytest.mark.parametrize("body", [
    {"audio_seconds_in": "lots"}, {"audio_seconds_in": 1e308}, {"wall_seconds": -5.0},
    {"counts": [1, 2]}, {"counts": {"files": None}}, {"finished_at": float("inf")},
])
def test_a_done_record_out_of_bounds_is_corrupt(body) -> None:
    from common.ledger.records import RecordError

    with pytest.raises(RecordError):
        _rec(shard_id=1, **body)
