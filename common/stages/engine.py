"""The one attempt engine: every stage, every driver (docs/architecture.md).

done-check -> fetch -> load -> process -> publish -> done record (or failure record) -> discard.
The Celery task (common/queue/worker.py) and ``onsei run`` (services/ops/runner.py) are thin
adapters: they decide how many attempts a shard gets and what happens after one; the engine does the
attempt and writes its outcome. An attempt whose outcome cannot be written (the output root is
read-only, the shard id has no usable name) says so as ``unrecorded``: the Celery adapter then
does not let the message go. A failure that is the node's (common/node/fault.py: a full disk, a
model that cannot load) is ``sick``: not recorded against the shard, which goes back.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from common.ledger.records import DoneBody, DoneRecord
from common.ledger.store import Ledger
from common.node.allocator import loading
from common.node.fault import NodeFault, node_fault
from common.node.price import node_of
from common.redact import redact_text
from common.settings import Settings
from common.stages.contract import Stage
from common.stages.prefetch import discard, fetch_into
from common.stages.spec import Pipeline
from common.storage import Store, open_store

log = logging.getLogger(__name__)
# One line per shard (received, done with audio hours and x real time, failed with reason),
# shown by a worker even at Celery's default WARNING level (common/queue/worker.py raises it).
shard_log = logging.getLogger("onsei.shards")

# Observers of shard attempts, called as (stage, shard_id, done record | None, error | None):
# common/queue/metrics.py registers one. An observer's failure is logged, never the shard's.
SHARD_OBSERVERS: list[Callable[[str, int, DoneRecord | None, BaseException | None], None]] = []

# sick: the node's fault (disk full, model cannot load): nothing recorded, the shard goes back
Status = Literal["done", "skipped", "failed", "dead", "unrecorded", "sick"]


def _notify(stage: str, shard_id: int, record: DoneRecord | None,
            error: BaseException | None) -> None:
    for observer in SHARD_OBSERVERS:
        try:
            observer(stage, shard_id, record, error)
        except Exception:
            log.exception("shard observer %r failed", observer)


def reason_of(exc: BaseException) -> str:
    return redact_text(f"{type(exc).__name__}: {exc}")


@dataclass
class ShardOutcome:
    stage: str
    shard_id: int
    skipped: bool
    record: DoneRecord | None


@dataclass
class Attempt:
    """How one attempt ended. ``failed``: recorded, may be retried; ``dead``: recorded, never
    retried; ``unrecorded``: failed and its failure record could not be written either."""

    stage: str
    shard_id: int
    status: Status
    record: DoneRecord | None = None
    reason: str = ""
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("done", "skipped")


class Engine:
    """One stage in one process: its stores, ledger and (lazily built, loaded once) stage.

    ``stage``: the stage's name (its class comes from its spec), a Stage class, or an instance.
    ``read_ahead``: inputs go to the shared per-shard download directory of
    common/stages/prefetch.py, where a read-ahead thread may already have put them, and are
    discarded after the attempt.
    """

    def __init__(self, settings: Settings, pipeline: Pipeline, stage: str | type[Stage] | Stage,
                 input_store: Store | None = None, output_store: Store | None = None,
                 read_ahead: bool = False) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.name = stage if isinstance(stage, str) else stage.name
        self.spec = pipeline.spec(self.name)
        self._stage = stage if isinstance(stage, Stage) else None
        self._stage_cls = stage if isinstance(stage, type) else None
        self.input = input_store or open_store(settings.input_url, settings)
        self.output = output_store or open_store(settings.output_url, settings)
        self.ledger = Ledger(self.output, settings, pipeline)
        self.read_ahead = read_ahead
        self._loaded = False
        self._work: tuple[int, Path] | None = None  # (pid, scratch dir) of :meth:`_workdir`

    # --- the stage --------------------------------------------------------------------------
    @property
    def stage(self) -> Stage:
        if self._stage is None:
            cls = self._stage_cls or self.spec.load_class()
            self._stage = cls(self.spec.section(self.settings))
        return self._stage

    def load(self) -> None:
        """Load the model once per process (after a fork, never in a Celery parent)."""
        if not self._loaded:
            with loading():  # the model files' buffers mapped, whatever the stage's allocator
                self.stage.load()
            self._loaded = True

    # --- inputs ------------------------------------------------------------------------------
    def fetch(self, shard_id: int, dest: Path) -> dict[str, Path]:
        local: dict[str, Path] = {}
        for name, ref in self.pipeline.inputs(self.name, self.settings, shard_id).items():
            path = dest / "in" / ref.key.replace("/", "__")
            (self.input if ref.root == "input" else self.output).get_file(ref.key, path)
            local[name] = path
        return local

    def input_identities(self, shard_id: int) -> dict[str, str]:
        """Each input's current identity (size + ETag/mtime): a copy in the shared download
        directory is reused only while these are unchanged (common/stages/prefetch.py finds this
        method through :meth:`fetch`). Raises NotFound for a missing input."""
        return {name: (self.input if ref.root == "input" else self.output).identity(ref.key)
                for name, ref in self.pipeline.inputs(self.name, self.settings, shard_id).items()}

    def fetch_ahead(self, shard_id: int) -> dict[str, Path]:
        """The shard's inputs in its shared download directory (made once, reused)."""
        return fetch_into(self.fetch, self.name, shard_id, self.settings)

    # --- one shard ---------------------------------------------------------------------------
    def run(self, shard_id: int, check_done: bool = True) -> ShardOutcome:
        """The success path; raises what went wrong (nothing recorded: see :meth:`attempt`)."""
        if check_done and self.ledger.is_done(self.name, shard_id):
            log.info("%s %s: already done, skipped", self.name, shard_id)
            return ShardOutcome(self.name, shard_id, True, None)
        workdir = self._workdir()
        try:
            t0 = time.monotonic()
            inputs = self.fetch_ahead(shard_id) if self.read_ahead else self.fetch(
                shard_id, workdir)
            t_fetched = time.monotonic()
            try:
                self.load()
            except Exception as e:  # any shard would fail here: the node's fault
                raise NodeFault(f"model load failed: {reason_of(e)}") from e
            t_loaded = time.monotonic()
            self.stage.clock.reset()  # model_seconds: this shard's model calls only
            keys = {n: ref.key for n, ref in
                    self.pipeline.inputs(self.name, self.settings, shard_id).items()}
            applies = {c.name: c.result for c in self.pipeline.corpus_steps
                       if c.applied_by == self.name}
            self.stage.bind_stores(self.input, self.output, keys, applies)
            result = self.stage.process(shard_id, inputs, workdir)
            model_seconds = self.stage.clock.seconds
            t_processed = time.monotonic()
            for key, path in result.outputs.items():
                self.output.put_file(path, key)
            info = self.stage.model_info()
            body = DoneBody(
                counts=result.counts,
                audio_seconds_in=round(result.audio_seconds_in, 3),
                audio_seconds_out=round(result.audio_seconds_out, 3),
                wall_seconds=round(time.monotonic() - t0 - (t_loaded - t_fetched), 3),
                fetch_seconds=round(t_fetched - t0, 3),
                process_seconds=round(t_processed - t_loaded, 3),
                model_seconds=round(model_seconds, 3),
                outputs=sorted(result.outputs),
                model=_text(info.get("model")),
                version=_text(info.get("version")),
                model_info=info,
                stats=result.extra,
                node=node_of(self.settings).as_record(),  # what the work cost: common/node
            )
            full = self.ledger.mark_done(self.name, shard_id, body)
            _notify(self.name, shard_id, full, None)
            return ShardOutcome(self.name, shard_id, False, full)
        except Exception as e:
            _notify(self.name, shard_id, None, e)
            raise
        finally:
            _empty(workdir)

    def _workdir(self) -> Path:
        """This process's scratch directory for one shard at a time, emptied after each: one
        made and removed per shard cost two journal writes each (docs/operations.md, "Scale")."""
        pid = os.getpid()
        if self._work is None or self._work[0] != pid or not self._work[1].is_dir():
            from common.stages.scratch import claim, sweep

            scratch = Path(self.settings.scratch_dir)
            # what killed workers left (their partial downloads among it), before taking more
            sweep(scratch, self.settings.task_time_limit)
            path, fd = claim(scratch, self.name)
            weakref.finalize(self, _remove_own, path, fd, pid)
            self._work = (pid, path)
        return self._work[1]

    def attempt(self, shard_id: int, attempt: int = 1, last: bool = False,
                check_done: bool = True) -> Attempt:
        """One attempt with its outcome written: a done record, or a failure record (dead when
        ``last`` or the model cannot be had). Never raises for the shard's sake."""
        shard_log.info("%s %s: received (attempt %d)", self.name, shard_id, attempt)
        try:
            out = self.run(shard_id, check_done=check_done)
        except Exception as e:  # noqa: BLE001 - every failure leaves a record
            fault = node_fault(e)
            if fault is not None:  # not this shard's failure: the caller hands it back
                shard_log.error("%s %s: node fault, not the shard's: %s", self.name, shard_id,
                                fault)
                return Attempt(self.name, shard_id, "sick", reason=fault, error=e)
            return self._failed(shard_id, e, attempt, last)
        finally:
            if self.read_ahead:
                self._discard(shard_id)
        if out.skipped:
            shard_log.info("%s %s: already done", self.name, shard_id)
            return Attempt(self.name, shard_id, "skipped")
        if out.record is not None:
            self._log_done(shard_id, out.record)
        return Attempt(self.name, shard_id, "done", record=out.record)

    def record_dead(self, shard_id: int, reason: str, attempts: int) -> Attempt:
        """Dead-letter without an attempt (e.g. every delivery crashed the worker)."""
        return self._record(shard_id, reason, "", attempts, True, None)

    def _failed(self, shard_id: int, e: BaseException, attempt: int, dead: bool) -> Attempt:
        return self._record(shard_id, reason_of(e), traceback.format_exc(), attempt, dead, e)

    def _record(self, shard_id: int, reason: str, tb: str, attempts: int, dead: bool,
                e: BaseException | None) -> Attempt:
        try:
            self.ledger.mark_failed(self.name, shard_id, reason, tb, attempts=attempts, dead=dead)
        except Exception as rec_err:  # noqa: BLE001 - reported loudly, the caller keeps the shard
            log.critical("%s %s: FAILED and the failure cannot be recorded (%s); the shard is "
                         "kept for another attempt. Failure: %s", self.name, shard_id,
                         reason_of(rec_err), reason)
            return Attempt(self.name, shard_id, "unrecorded", reason=reason, error=rec_err)
        status: Status = "dead" if dead else "failed"
        shard_log.warning("%s %s: %s (attempt %d): %s", self.name, shard_id,
                          "dead-lettered" if dead else "failed", attempts, reason)
        return Attempt(self.name, shard_id, status, reason=reason, error=e)

    def _discard(self, shard_id: int) -> None:
        try:
            discard(self.name, shard_id, self.settings)
        except Exception as e:  # noqa: BLE001 - a leftover download is collected later
            log.warning("%s %s: cannot discard its downloads: %s", self.name, shard_id, e)

    def _log_done(self, shard_id: int, rec: DoneRecord) -> None:
        audio, wall = rec.audio_seconds_in, rec.wall_seconds
        shard_log.info("%s %s: done, %.3f audio hours in %.1f s (%.1fx real time)", self.name,
                       shard_id, audio / 3600, wall, audio / wall if wall > 0 else 0.0)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _empty(workdir: Path) -> None:
    """Remove what a shard left in ``workdir``, keeping the directory."""
    try:
        entries = list(os.scandir(workdir))
    except OSError:
        return  # gone: the next shard makes a new one
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _remove_own(path: Path, fd: int, pid: int) -> None:
    from common.stages.scratch import release

    if os.getpid() == pid:  # a forked child's exit must not remove its parent's directory
        release(path, fd)
