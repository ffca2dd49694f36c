"""What is done (docs/architecture.md): one done record per stage and shard, written last.

``_ledger/<stage>/shard-000123.json`` under the output root, where a stage's spec may name a
deeper directory (one per codec: ``_ledger/<stage>/<variant>/...``). The object store is the
truth; Redis only mirrors it. Failure records live beside them under ``_ledger/_failed/...``
(per variant too) and never count as done.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from common.ledger.records import DoneBody, DoneRecord, FailureRecord, RecordError
from common.record import Record
from common.redact import redact_text
from common.settings import Settings
from common.storage import NotFound, Store

if TYPE_CHECKING:
    from common.stages.spec import Pipeline

log = logging.getLogger(__name__)
R = TypeVar("R", bound=Record)

LEDGER = "_ledger"


class Scan(list[R], Generic[R]):
    """The records under a prefix that read as records; ``corrupt``: the others, key -> why
    (reported as corrupt by status and the report, never counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.corrupt: dict[str, str] = {}
# A stem longer than this cannot be a file name on common file systems (255 bytes): such a
# shard's failure record goes under a hashed name instead, so it is still written.
MAX_STEM_BYTES = 200


def stem_parser(settings: Settings) -> Callable[[str], int | None]:
    """``shard-000123`` -> 123 for the configured shard pattern (None: not one of ours).

    The pattern is turned into a regex for the id and the result is checked by formatting it
    back, so digits elsewhere in the pattern or odd format specs never yield a wrong id."""
    stem_pat = settings.shard_pattern.removesuffix(".tar")
    pieces = [re.escape(p.replace("{{", "{").replace("}}", "}"))
              for p in re.split(r"\{id(?:![rsa])?(?::[^}]*)?\}", stem_pat)]
    # the first id field is captured; any repeat of it must be digits too
    rx = re.compile(pieces[0] + "(\\d+)" + "\\d+".join(pieces[1:]) + "$")
    fmt = settings.shard_pattern.format  # settings.shard_stem, bound once: 150,000 calls

    def parse(stem: str) -> int | None:
        m = rx.match(stem)
        if not m:
            return None
        sid = int(m.group(1))
        return sid if fmt(id=sid).removesuffix(".tar") == stem else None

    return parse


class Ledger:
    """``pipeline`` says where each stage's records live (its spec's ledger directory); without
    one a stage's records are under ``_ledger/<stage>/``."""

    def __init__(self, store: Store, settings: Settings, pipeline: Pipeline | None = None) -> None:
        self.store = store
        self.settings = settings
        self.pipeline = pipeline

    # --- keys -----------------------------------------------------------------------------
    def stage_dir(self, stage: str) -> str:
        sub = self.pipeline.ledger_subdir(stage, self.settings) if self.pipeline else stage
        return f"{LEDGER}/{sub}"

    def failed_dir(self, stage: str) -> str:
        # Per variant too: a new codec neither inherits nor erases the old one's failures.
        return f"{LEDGER}/_failed/{self.stage_dir(stage)[len(LEDGER) + 1:]}"

    def done_key(self, stage: str, shard_id: int) -> str:
        return f"{self.stage_dir(stage)}/{self.settings.shard_stem(shard_id)}.json"

    def failed_key(self, stage: str, shard_id: int) -> str:
        try:
            stem = self.settings.shard_stem(shard_id)
        except (ValueError, TypeError, OverflowError):
            stem = ""
        if not stem or len(stem.encode()) > MAX_STEM_BYTES or "/" in stem:
            digest = hashlib.sha256(repr(shard_id).encode()).hexdigest()[:16]
            stem = f"_invalid-{digest}"  # no shard's stem: never counted as a shard's failure
        return f"{self.failed_dir(stage)}/{stem}.json"

    # --- done records -------------------------------------------------------------------------
    def mark_done(self, stage: str, shard_id: int,
                  body: DoneBody | Mapping[str, Any]) -> DoneRecord:
        """Write the done record (atomic, last): ``body`` plus shard, stage, host and finish
        time (who the record is about is never taken from the body)."""
        fields = body.to_dict() if isinstance(body, DoneBody) else dict(body)
        for key in ("stage", "shard_id", "shard", "host", "finished_at"):
            fields.pop(key, None)
        full = DoneRecord.from_dict({
            **fields, "stage": stage, "shard_id": shard_id,
            "shard": self.settings.shard_name(shard_id),
            "host": socket.gethostname(), "finished_at": time.time()})
        self.store.write_bytes(self.done_key(stage, shard_id), _dumps(full.to_dict()))
        # A success supersedes any older failure record of the same shard.
        self.store.delete(self.failed_key(stage, shard_id))
        return full

    def is_done(self, stage: str, shard_id: int) -> bool:
        """A done record that reads as one: a corrupt record is not done (the shard is redone
        and its record rewritten)."""
        try:
            return self.read_done(stage, shard_id) is not None
        except RecordError as e:
            log.warning("%s %s: corrupt done record, the shard is not done: %s",
                        stage, shard_id, e)
            return False

    def read_done(self, stage: str, shard_id: int) -> DoneRecord | None:
        """The shard's done record; None when there is none; :class:`RecordError` when it is
        corrupt."""
        try:
            data = self.store.read_bytes(self.done_key(stage, shard_id))
        except NotFound:
            return None
        rec = DoneRecord.from_json(data)
        if rec.shard_id != shard_id or rec.stage != stage:
            raise RecordError(f"the done record of {stage} {shard_id} names "
                              f"{rec.stage} {rec.shard_id}")
        return rec

    def done_ids(self, stage: str, ids: Collection[int] | None = None) -> set[int]:
        """Shard ids with a done record: one LIST per page of the stage's prefix, no per-shard
        request. With ``ids`` (a range or set) the listing is narrowed to their common name
        prefix where the names allow it. A listing cannot tell a corrupt record: readers that
        must (status, enqueue) read the bodies through common/ledger/index.py."""
        return self._ids_under(self.stage_dir(stage) + "/", ids)

    def done_records(self, stage: str) -> Scan[DoneRecord]:
        prefix = self.stage_dir(stage) + "/"
        keys = [k for k in self.store.list(prefix)
                if k.endswith(".json") and "/" not in k[len(prefix):]]
        return self._scan(keys, DoneRecord)

    # --- failure records ------------------------------------------------------------------------
    def mark_failed(
        self, stage: str, shard_id: Any, reason: str, traceback: str = "", attempts: int = 0,
        dead: bool = False,
    ) -> FailureRecord:
        rec = FailureRecord.from_dict({
            "stage": stage,
            "shard_id": shard_id,
            "shard": _shard_name(self.settings, shard_id),
            "reason": redact_text(reason),
            "traceback": redact_text(traceback),
            "attempts": attempts,
            "dead_lettered": dead,
            "host": socket.gethostname(),
            "failed_at": time.time(),
        })
        self.store.write_bytes(self.failed_key(stage, shard_id), _dumps(rec.to_dict()))
        return rec

    def failures(self, stage: str) -> Scan[FailureRecord]:
        return self._scan(list(self.store.list(self.failed_dir(stage) + "/")), FailureRecord)

    def _scan(self, keys: list[str], cls: type[R]) -> Scan[R]:
        out: Scan[R] = Scan()
        for key in keys:
            try:
                out.append(cls.from_json(self.store.read_bytes(key)))
            except NotFound:
                continue  # removed since the listing
            except RecordError as e:
                out.corrupt[key] = str(e)
        return out

    def failed_ids(self, stage: str, ids: Collection[int] | None = None) -> set[int]:
        return self._ids_under(self.failed_dir(stage) + "/", ids)

    def done_tagged(self, stage: str, ids: Collection[int] | None = None) -> dict[int, str]:
        """Like :meth:`done_ids`, with each record's tag (changes when it is rewritten: see
        ``Store.list_tagged``), for a cache of the records (common/ledger/index.py)."""
        return self._tagged_under(self.stage_dir(stage) + "/", ids, tagged=True)

    def _ids_under(self, prefix: str, ids: Collection[int] | None) -> set[int]:
        return set(self._tagged_under(prefix, ids, tagged=False))

    def _tagged_under(self, prefix: str, ids: Collection[int] | None,
                      tagged: bool) -> dict[int, str]:
        parse = stem_parser(self.settings)
        narrowed = prefix + _common_stem_prefix(self.settings, ids)
        listing = (self.store.list_tagged(narrowed) if tagged else
                   ((k, "") for k in self.store.list(narrowed)))
        found: dict[int, str] = {}
        for key, tag in listing:
            name = key[len(prefix):]
            if "/" in name or not name.endswith(".json"):
                continue
            sid = parse(name[: -len(".json")])
            if sid is not None and (ids is None or sid in ids):
                found[sid] = tag
        return found


def _common_stem_prefix(settings: Settings, ids: Collection[int] | None) -> str:
    """The name prefix every id in ``ids`` shares (``shard-00`` for 0..9999), or "".

    Valid when the first and last stems have the same length: then every id between them has
    the same number of digits, so its stem sorts between them and shares their prefix."""
    if not ids:
        return ""
    lo, hi = (ids.start, ids[-1]) if isinstance(ids, range) and ids.step == 1 else (
        min(ids), max(ids))
    a, b = settings.shard_stem(lo), settings.shard_stem(hi)
    if len(a) != len(b):
        return ""
    return os.path.commonprefix([a, b])


def _shard_name(settings: Settings, shard_id: int) -> str:
    try:
        name = settings.shard_name(shard_id)
    except (ValueError, TypeError, OverflowError) as e:
        return f"<no name: {e}>"
    return name if len(name) <= MAX_STEM_BYTES else name[:MAX_STEM_BYTES] + "..."


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True).encode()
