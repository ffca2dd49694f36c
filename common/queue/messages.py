"""What a stage task's message must carry, checked before any work is done.

``args``: exactly one shard id, a whole number from 0 to :data:`MAX_SHARD_ID` (JSON ``1.5``,
``true``, ``"1"``, ``null`` and ``1e400`` are refused: ``int()`` would have turned three of them
into shard 1; ``10**30`` names no shard there can be).
``kwargs``: ``until`` (absent, null, or a stage at or after this one) and ``force`` (true or
false); nothing else. A refused message gets one line saying why (:class:`InvalidMessage`);
common/queue/worker.py records it under the ledger's failures and lets the message go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.stages.spec import Pipeline

_SHOWN = 80  # characters of a refused value quoted in the reason
# The largest signed 64-bit integer: what Parquet/Arrow int64 columns, SQL BIGINT, Redis's
# integers and JSON readers outside Python (Go, Java, Rust) hold, so every shard id a worker
# accepts can be named in an index or table of shards.
MAX_SHARD_ID = 2**63 - 1


class InvalidMessage(ValueError):
    """A message no attempt can be made of: refused, recorded, never retried."""


@dataclass(frozen=True)
class StageArgs:
    shard_id: int
    until: str | None
    force: bool


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def parse_args(pipeline: Pipeline, stage: str, args: Any, kwargs: Any) -> StageArgs:
    """The message's arguments, or :class:`InvalidMessage` naming the first thing wrong."""
    if not isinstance(args, (list, tuple)):
        raise InvalidMessage(f"arguments {_show(args)} are not a list")
    if not isinstance(kwargs, dict):
        raise InvalidMessage(f"keyword arguments {_show(kwargs)} are not a mapping")
    if len(args) != 1:
        raise InvalidMessage(f"expected one shard id, got {len(args)} arguments {_show(args)}")
    shard_id = args[0]
    # bool is an int in Python: JSON true must not become shard 1
    if type(shard_id) is not int or shard_id < 0:
        raise InvalidMessage(f"shard id {_show(shard_id)} is not a whole number >= 0")
    if shard_id > MAX_SHARD_ID:
        raise InvalidMessage(f"shard id {_show(shard_id)} is over {MAX_SHARD_ID} (2**63 - 1)")
    unknown = sorted(str(k) for k in kwargs if k not in ("until", "force"))
    if unknown:
        raise InvalidMessage(f"unexpected arguments {', '.join(unknown)[:_SHOWN]}")
    until = kwargs.get("until")
    if until is not None:
        if not isinstance(until, str) or until not in pipeline:
            raise InvalidMessage(f"until {_show(until)} is not a stage "
                                 f"(one of {', '.join(pipeline.names)})")
        if pipeline.names.index(until) < pipeline.names.index(stage):
            raise InvalidMessage(f"until {until!r} comes before {stage!r}")
    force = kwargs.get("force", False)
    if not isinstance(force, bool):
        raise InvalidMessage(f"force {_show(force)} is not true or false")
    return StageArgs(shard_id, until, force)
