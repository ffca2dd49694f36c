"""A stage's ``stats`` block, typed: each stage declares a :class:`StageStats` model next to
itself (``services/<stage>/stats.py``), builds it when it finishes a shard and reads it back
with :meth:`StageStats.read`, so no figure is looked up by its name as text.

Reading never fails a whole record for one bad figure: a done record is written once and read
by reports for months, and one entry of a list that does not parse says nothing about the
others. A field that does not read is left at its default, a list entry that does not read is
left out, and each is named in the :class:`Damage` list the reader gets beside the model.
Records written before the ``stats`` block had these keys at the top level: they are read there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from pydantic import ValidationError

from common.ledger.records import DoneRecord
from common.record import Record

__all__ = ["Damage", "ErrorEntry", "StageStats"]

# Each pass takes out what the last one named; a figure nested in a list's entry may take one
# pass for the entry, none more: past these the block is read as its defaults.
_PASSES = 4


@dataclass(frozen=True)
class Damage:
    """A figure of the stats block that did not read: its field, its index in a list field
    (None: the whole field), and why."""

    field: str
    index: int | None
    why: str


class ErrorEntry(Record):
    """One error a done record samples: the member's key or the segment's id (None: an input
    line not understood) and the reason it was written with."""

    key: str | None = None
    reason: str


class StageStats(Record):
    """The base of a stage's stats model: strict and keeping unknown keys, as every record;
    every field has a default (what a figure that does not read is taken as)."""

    @classmethod
    def read(cls, rec: DoneRecord) -> tuple[Self, list[Damage]]:
        """The record's stats as this model, and what of them did not read."""
        raw: dict[str, Any] = {}
        for name in cls.model_fields:
            if name in rec.stats:
                raw[name] = rec.stats[name]
            elif name in rec.extra:  # written before the stats block
                raw[name] = rec.extra[name]
        damaged: list[Damage] = []
        for _ in range(_PASSES):
            try:
                return cls.model_validate(raw), damaged
            except ValidationError as e:
                dropped = _drop(raw, e)
            if not dropped:  # nothing named that can be taken out
                break
            damaged += dropped
        return cls(), damaged + [Damage("", None, "unreadable: read as its defaults")]


def _drop(raw: dict[str, Any], e: ValidationError) -> list[Damage]:
    """Takes out of ``raw`` what ``e`` names: a list's entry where the error is inside one,
    else the whole field."""
    items: dict[str, dict[int, str]] = {}
    fields: dict[str, str] = {}
    for err in e.errors():
        loc, why = err["loc"], err["msg"][:200]
        name = str(loc[0]) if loc else ""
        if name not in raw:
            continue  # a required field missing: nothing to drop, the pass gives up
        if len(loc) >= 2 and isinstance(loc[1], int) and isinstance(raw[name], list):
            items.setdefault(name, {}).setdefault(loc[1], why)
        else:
            fields.setdefault(name, why)
    out = [Damage(name, None, why) for name, why in fields.items()]
    for name in fields:
        del raw[name]
        items.pop(name, None)
    for name, bad in items.items():
        raw[name] = [v for i, v in enumerate(raw[name]) if i not in bad]
        out += [Damage(name, i, why) for i, why in sorted(bad.items())]
    return out
