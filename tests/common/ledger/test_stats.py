"""common/ledger/stats.py: a stage's stats block read as its typed model, from the ``stats``
block or (records written before it) the top level, one bad figure costing only itself."""

from __future__ import annotations

from pydantic import Field

from common.ledger.records import DoneRecord
from common.ledger.stats import Damage, ErrorEntry, StageStats
from common.record import Record


class Item(Record):
    name: str
    n: int = 0


class Demo(StageStats):
    batches: int = Field(0, ge=0)
    share: float = 0.0
    items: list[Item] = Field(default_factory=list)
    errors: list[ErrorEntry] = Field(default_factory=list)


def test_reads_the_stats_block() -> None:
    rec = DoneRecord(stage="x", shard_id=1, stats=Demo(
        batches=3, share=0.25, items=[Item(name="a", n=2)],
        errors=[ErrorEntry(key=None, reason="bad")]).to_dict())
    got, damage = Demo.read(DoneRecord.from_json(rec.to_json()))
    assert damage == []
    assert (got.batches, got.share, got.items[0].name, got.errors[0].reason) == (3, 0.25, "a",
                                                                                "bad")


def test_old_record_with_top_level_figures() -> None:
    old = DoneRecord.from_json('{"stage": "x", "shard_id": 2, "batches": 7, "share": 0.5, '
                               '"items": [{"name": "b"}], "unrelated": true}')
    got, damage = Demo.read(old)
    assert damage == [] and (got.batches, got.share, got.items[0].n) == (7, 0.5, 0)
    assert got.extra == {}  # only the model's own keys are taken from the top level


def test_stats_block_wins_over_the_top_level() -> None:
    rec = DoneRecord.from_dict({"stage": "x", "shard_id": 0, "batches": 1,
                                "stats": {"batches": 2}})
    assert Demo.read(rec)[0].batches == 2


def test_a_bad_figure_costs_only_itself() -> None:
    rec = DoneRecord(stage="x", shard_id=0, stats={
        "batches": -1, "share": 0.5,
        "items": [{"name": "a"}, {"n": 3}, "nonsense", {"name": "d", "n": 4}]})
    got, damage = Demo.read(rec)
    assert got.batches == 0 and got.share == 0.5
    assert [i.name for i in got.items] == ["a", "d"]
    assert [(d.field, d.index) for d in damage] == [("batches", None), ("items", 1),
                                                    ("items", 2)]
    assert all(isinstance(d, Damage) and d.why for d in damage)


def test_a_field_of_the_wrong_shape_reads_as_its_default() -> None:
    rec = DoneRecord(stage="x", shard_id=0, stats={"items": {"name": "a"}, "share": "0.5"})
    got, damage = Demo.read(rec)
    assert got.items == [] and got.share == 0.0
    assert sorted(d.field for d in damage) == ["items", "share"]
