"""Drive one stage over one shard: fetch, process, publish whole, done record last.

Used by every Celery task and by ``onsei run``, so both behave the same. Idempotent: a shard
whose done record exists is skipped, and outputs are overwritten whole, so a redelivered
message does no harm.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.cost import node_of
from common.ledger import Ledger
from common.settings import Settings
from common.stage import Stage
from common.storage import Store, open_store

log = logging.getLogger(__name__)

# Observers of shard attempts, called as (stage, shard_id, done record | None, error | None):
# common/metrics.py registers one. An observer's failure is logged, never the shard's.
SHARD_OBSERVERS: list[Callable[[str, int, dict | None, BaseException | None], None]] = []


def _notify(stage: str, shard_id: int, record: dict | None, error: BaseException | None) -> None:
    for observer in SHARD_OBSERVERS:
        try:
            observer(stage, shard_id, record, error)
        except Exception:
            log.exception("shard observer %r failed", observer)


@dataclass
class ShardOutcome:
    stage: str
    shard_id: int
    skipped: bool
    record: dict[str, Any] | None


class Executor:
    """Holds the stores and ledger for a process; runs shards through a loaded stage."""

    def __init__(self, settings: Settings, input_store: Store | None = None,
                 output_store: Store | None = None) -> None:
        self.settings = settings
        self.input = input_store or open_store(settings.input_url, settings)
        self.output = output_store or open_store(settings.output_url, settings)
        self.ledger = Ledger(self.output, settings)

    def _store(self, root: str) -> Store:
        return self.input if root == "input" else self.output

    def fetch_inputs(self, stage: Stage, shard_id: int, workdir: Path) -> dict[str, Path]:
        local: dict[str, Path] = {}
        for name, ref in stage.inputs(shard_id).items():
            dest = workdir / "in" / ref.key.replace("/", "__")
            self._store(ref.root).get_file(ref.key, dest)
            local[name] = dest
        return local

    def run_shard(self, stage: Stage, shard_id: int, force: bool = False,
                  prefetched: dict[str, Path] | None = None) -> ShardOutcome:
        if not force and self.ledger.is_done(stage.name, shard_id):
            log.info("%s %s: already done, skipped", stage.name, shard_id)
            return ShardOutcome(stage.name, shard_id, True, None)
        stage.load()
        scratch = Path(self.settings.scratch_dir)
        scratch.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f"onsei-{stage.name}-{shard_id}-", dir=scratch))
        try:
            t0 = time.monotonic()
            inputs = prefetched if prefetched is not None else self.fetch_inputs(
                stage, shard_id, workdir)
            t_fetched = time.monotonic()
            result = stage.process(shard_id, inputs, workdir)
            t_processed = time.monotonic()
            for key, path in result.outputs.items():
                self.output.put_file(path, key)
            wall = time.monotonic() - t0
            record = {
                "counts": result.counts,
                "audio_seconds_in": round(result.audio_seconds_in, 3),
                "audio_seconds_out": round(result.audio_seconds_out, 3),
                "wall_seconds": round(wall, 3),
                "fetch_seconds": round(t_fetched - t0, 3),
                "process_seconds": round(t_processed - t_fetched, 3),
                "model_seconds": round(result.model_seconds, 3),
                "outputs": sorted(result.outputs),
                **stage.model_info(),
                **result.extra,
                "node": node_of(self.settings).as_record(),  # what the work cost: common/cost
            }
            full = self.ledger.mark_done(stage.name, shard_id, record)
            _notify(stage.name, shard_id, full, None)
            return ShardOutcome(stage.name, shard_id, False, full)
        except Exception as e:
            _notify(stage.name, shard_id, None, e)
            raise
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
