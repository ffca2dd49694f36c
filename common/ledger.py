"""What is done (DESIGN §3): one done record per stage and shard, written last.

``_ledger/<stage>/shard-000123.json`` (tokenize: ``_ledger/tokenize/<tokenizer>/...``) under
the output root. The object store is the truth; Redis only mirrors it. Failure records live
beside them under ``_ledger/_failed/<stage>/`` and never count as done.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterable
from typing import Any

from common.redact import redact_text
from common.settings import Settings
from common.storage import NotFound, Store

LEDGER = "_ledger"


def stage_dir(stage: str, settings: Settings) -> str:
    if stage == "tokenize":
        return f"{LEDGER}/tokenize/{settings.tokenizer}"
    return f"{LEDGER}/{stage}"


class Ledger:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    # --- keys -----------------------------------------------------------------------------
    def done_key(self, stage: str, shard_id: int) -> str:
        return f"{stage_dir(stage, self.settings)}/{self.settings.shard_stem(shard_id)}.json"

    def failed_key(self, stage: str, shard_id: int) -> str:
        return f"{LEDGER}/_failed/{stage}/{self.settings.shard_stem(shard_id)}.json"

    # --- done records -------------------------------------------------------------------------
    def mark_done(self, stage: str, shard_id: int, record: dict[str, Any]) -> dict[str, Any]:
        """Write the done record (atomic, last). Adds shard, stage, host and finish time."""
        full = {
            "stage": stage,
            "shard_id": shard_id,
            "shard": self.settings.shard_name(shard_id),
            "host": socket.gethostname(),
            "finished_at": time.time(),
            **record,
        }
        self.store.write_bytes(self.done_key(stage, shard_id), _dumps(full))
        # A success supersedes any older failure record of the same shard.
        self.store.delete(self.failed_key(stage, shard_id))
        return full

    def is_done(self, stage: str, shard_id: int) -> bool:
        return self.store.exists(self.done_key(stage, shard_id))

    def read_done(self, stage: str, shard_id: int) -> dict[str, Any] | None:
        try:
            return json.loads(self.store.read_bytes(self.done_key(stage, shard_id)))
        except NotFound:
            return None

    def done_ids(self, stage: str, ids: Iterable[int] | None = None) -> set[int]:
        """Shard ids with a done record: one LIST per page of the stage's prefix, no per-shard GET."""
        prefix = stage_dir(stage, self.settings) + "/"
        found = self._ids_under(prefix)
        if ids is None:
            return found
        wanted = set(ids)
        return found & wanted

    def done_records(self, stage: str) -> list[dict[str, Any]]:
        prefix = stage_dir(stage, self.settings) + "/"
        out = []
        for key in self.store.list(prefix):
            if key.endswith(".json") and "/" not in key[len(prefix):]:
                try:
                    out.append(json.loads(self.store.read_bytes(key)))
                except (NotFound, ValueError):
                    continue
        return out

    # --- failure records ------------------------------------------------------------------------
    def mark_failed(
        self, stage: str, shard_id: int, reason: str, traceback: str = "", attempts: int = 0,
        dead: bool = False,
    ) -> None:
        rec = {
            "stage": stage,
            "shard_id": shard_id,
            "shard": self.settings.shard_name(shard_id),
            "reason": redact_text(reason),
            "traceback": redact_text(traceback),
            "attempts": attempts,
            "dead_lettered": dead,
            "host": socket.gethostname(),
            "failed_at": time.time(),
        }
        self.store.write_bytes(self.failed_key(stage, shard_id), _dumps(rec))

    def failures(self, stage: str) -> list[dict[str, Any]]:
        prefix = f"{LEDGER}/_failed/{stage}/"
        out = []
        for key in self.store.list(prefix):
            try:
                out.append(json.loads(self.store.read_bytes(key)))
            except (NotFound, ValueError):
                continue
        return out

    def failed_ids(self, stage: str) -> set[int]:
        return self._ids_under(f"{LEDGER}/_failed/{stage}/")

    def _ids_under(self, prefix: str) -> set[int]:
        ids: set[int] = set()
        for key in self.store.list(prefix):
            name = key[len(prefix):]
            if "/" in name or not name.endswith(".json"):
                continue
            m = re.search(r"(\d+)\.json$", name)
            if m:
                ids.add(int(m.group(1)))
        return ids


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True).encode()
