"""The ledger's records, typed: a stage's done record and a failure record.

``DoneBody`` is what an attempt measured and produced (the engine builds it); the ledger adds
who and when and writes a :class:`DoneRecord`. The stage's own figures live in two named blocks
that nothing else writes into, so no key can overwrite another:

- ``model_info``: what its ``Stage.model_info()`` said (model, version, device, annotation
  models and thresholds, ...); ``model`` and ``version`` repeat its two headline values;
- ``stats``: its ``StageResult.extra`` (languages seen, padding, the quality counts, the
  tokenize filter's skipped segments, ...), written and read as the stage's typed model
  (:class:`common.ledger.stats.StageStats`, declared beside the stage).

Every number is checked on reading (finite, not negative, below :data:`MAX_SECONDS`): a record
that fails is *corrupt*, and a corrupt done record never counts as done (its shard is redone).
Records written before the named blocks had the stage's figures at the top level: they are
kept as unknown keys, and the stage's model (or :meth:`DoneRecord.stat`) still finds them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from common.record import Record, RecordError

__all__ = ["MAX_SECONDS", "DoneBody", "DoneRecord", "FailureRecord", "RecordError"]

# Longer than any shard's audio or work can be (a year): a larger value is a corrupt record,
# not a figure to add up.
MAX_SECONDS = 366 * 86400.0
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]
Timestamp = Annotated[float, Field(ge=0, le=1e11, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]


class DoneBody(Record):
    """What one attempt of a stage measured and produced."""

    counts: dict[str, Count] = Field(default_factory=dict)
    audio_seconds_in: Seconds = 0.0
    audio_seconds_out: Seconds = 0.0
    wall_seconds: Seconds = 0.0
    fetch_seconds: Seconds = 0.0
    process_seconds: Seconds = 0.0
    model_seconds: Seconds = 0.0
    outputs: list[str] = Field(default_factory=list)
    model: str | None = None
    version: str | None = None
    model_info: dict[str, Any] = Field(default_factory=dict)
    stats: dict[str, Any] = Field(default_factory=dict)
    node: dict[str, Any] | None = None  # what the work cost (common/node/price.py)


class DoneRecord(DoneBody):
    """``_ledger/<stage dir>/<shard>.json``: written last, after the outputs."""

    stage: str
    shard_id: Count
    shard: str = ""
    host: str = ""
    finished_at: Timestamp = 0.0

    def stat(self, name: str, default: Any = None) -> Any:
        """A figure of the stage's ``stats`` block by its name, untyped (or, in a record
        written before that block, the same key at the top level): for a look at one record
        (tests, a shell); code reads the stage's :class:`~common.ledger.stats.StageStats`."""
        if name in self.stats:
            return self.stats[name]
        return self.extra.get(name, default)


class FailureRecord(Record):
    """``_ledger/_failed/<stage dir>/<shard>.json``: the last failed attempt of a shard.

    ``shard_id`` is None for a message that named no valid shard (its record is under an
    ``_invalid-<hash>`` name); ``given_id`` then keeps what it named, as text."""

    stage: str
    shard_id: Count | None = None
    given_id: str | None = None
    shard: str = ""
    reason: str = ""
    traceback: str = ""
    attempts: Count = 0
    dead_lettered: bool = False
    host: str = ""
    failed_at: Timestamp = 0.0

    @model_validator(mode="before")
    @classmethod
    def _invalid_id(cls, data: Any) -> Any:
        # A message may name anything as its shard: what it named is kept as text, never as
        # a shard id that could match a real shard.
        if isinstance(data, dict):
            sid = data.get("shard_id")
            if sid is not None and (type(sid) is not int or sid < 0):
                data = {**data, "shard_id": None, "given_id": repr(sid)[:200]}
        return data
