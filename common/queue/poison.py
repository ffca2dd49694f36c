"""Refuse a poison message with a record, and keep the worker running.

A list entry that is not JSON, or whose body cannot be decoded (not valid base64), made kombu's
Redis transport raise inside the worker's event loop: celery stopped with "Unrecoverable error"
and the entry, already popped off the list, was gone. Two guards, both in the worker's main
process:

- :func:`install` (the transport): the entry is parsed within bounds and checked before kombu
  builds a message of it (:mod:`common.queue.envelope`); a bad one is refused here. It was never
  recorded as unacknowledged, so nothing else holds it. Whatever kombu still cannot take is
  refused too, connection errors aside.
- :class:`RefusingConsumer` (celery's consumer, ``worker_consumer``): a message whose headers
  are not celery's task protocol 2, for an unknown task, or whose body is not
  ``[args, kwargs, options]`` in JSON is refused before it reaches a pool process (celery would
  drop it with a log line only, or end the worker), and so is any message celery's own handler
  raises on.

Refused means recorded, then let go: under the ledger's failures as ``_invalid-<digest>``
(:func:`write_refused`), through the recorder the stage's task registered for its queue; if
that cannot be written, in the Redis list ``onsei:refused:<queue>``; a message kept nowhere
is not acknowledged (it returns after the visibility timeout).
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from celery.worker.consumer import Consumer

from common.ledger.records import FailureRecord
from common.queue.envelope import body_problem, bounded_loads, entry_problem
from common.redact import redact_text

if TYPE_CHECKING:
    from common.ledger.store import Ledger

log = logging.getLogger(__name__)

_PATCHED = "_onsei_poison_guard"
# queue -> recorder(token, reason, raw message): writes the record or raises
Recorder = Callable[[str, str, str], None]
_RECORDERS: dict[str, Recorder] = {}
_FALLBACK: dict[str, Callable[[str, str], None]] = {}  # "redis" -> push(queue, raw)


def refused_key(queue: str) -> str:
    return f"onsei:refused:{queue}"


def register(queue: str, recorder: Recorder, fallback: Callable[[str, str], None] | None = None,
             ) -> None:
    """``recorder`` keeps the refused messages of ``queue`` (a stage's ledger); ``fallback``
    (queue, raw) keeps one when the recorder fails."""
    _RECORDERS[queue] = recorder
    if fallback is not None:
        _FALLBACK["redis"] = fallback


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "backslashreplace")).hexdigest()[:32]


def refused_record_key(ledger: Ledger, stage: str, token: str) -> str:
    """Never a shard's stem, so never counted as a shard's failure."""
    name = hashlib.sha256(f"message:{token}".encode()).hexdigest()[:16]
    return f"{ledger.failed_dir(stage)}/_invalid-{name}.json"


def write_refused(ledger: Ledger, stage: str, token: str, reason: str, raw: str) -> str:
    """A failure record for a message refused before any work: it names no shard
    (``shard_id`` None), is dead-lettered (never retried), and keeps the first 4 KiB of what the
    message carried under ``message``. Returns its key."""
    key = refused_record_key(ledger, stage, token)
    rec = FailureRecord.from_dict({
        "stage": stage, "shard": "<invalid message>", "reason": redact_text(reason),
        "message": redact_text(raw[:4096]), "dead_lettered": True,
        "host": socket.gethostname(), "failed_at": time.time()})
    ledger.store.write_bytes(key, json.dumps(rec.to_dict(), ensure_ascii=False, indent=1,
                                             sort_keys=True).encode())
    return key


def refuse(queue: str | None, raw: str, reason: str, token: str | None = None) -> bool:
    """Record a refused message; True when it is kept somewhere (then it may be let go)."""
    if queue not in _RECORDERS and len(_RECORDERS) == 1:
        queue = next(iter(_RECORDERS))  # a hand-made message may not say: one stage's worker
    queue = queue or "?"
    token = token or digest(raw)
    line = f"refused a message on queue {queue!r}: {reason}"
    recorder = _RECORDERS.get(queue)
    if recorder is not None:
        try:
            recorder(token, reason, raw)
            log.error("%s (recorded under the ledger's failures)", redact_text(line))
            return True
        except Exception as e:  # noqa: BLE001 - the fallback below keeps it
            log.warning("cannot record the refused message in the ledger: %s", redact_text(
                f"{type(e).__name__}: {e}"))
    push = _FALLBACK.get("redis")
    if push is not None:
        try:
            push(queue, raw)
            log.error("%s (kept in Redis under %s)", redact_text(line), refused_key(queue))
            return True
        except Exception as e:  # noqa: BLE001
            log.warning("cannot keep the refused message in Redis: %s", e)
    log.critical("%s; kept nowhere: %s", redact_text(line), redact_text(raw[:2048]))
    return False


# --- the transport ------------------------------------------------------------------------------
def _raw_of(message: Any) -> str:
    """The entry's text as it was in Redis where it is known (:mod:`common.queue.envelope`)."""
    text = getattr(message, "text", None)
    if isinstance(text, str):
        return text
    try:
        return json.dumps(message)
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(message)
        except RecursionError:
            return f"<a {type(message).__name__} nested too deep to show>"


def install() -> None:
    """Guard kombu's Redis transport (idempotent; a no-op without it)."""
    try:
        from kombu.transport import redis as kredis
    except ImportError:  # pragma: no cover - RabbitMQ-only deployments
        return
    deliver = kredis.Transport._deliver
    if getattr(deliver, _PATCHED, False):
        return
    strict_loads = kredis.loads

    def tolerant_loads(text: Any) -> Any:
        return bounded_loads(text, strict_loads)

    def guarded_deliver(self: Any, message: Any, queue: str) -> Any:
        problem = entry_problem(message)
        if problem is None:
            try:
                return deliver(self, message, queue)
            except (*self.connection_errors, *self.channel_errors):
                raise  # celery reconnects; the message stays in Redis
            except Exception as e:  # anything else would end the worker
                problem = f"kombu cannot take the entry: {type(e).__name__}: {e}"
                log.exception("refusing an entry kombu cannot take")
        refuse(queue, _raw_of(message), problem[:400])
        return None

    setattr(guarded_deliver, _PATCHED, True)
    kredis.loads = tolerant_loads
    kredis.Transport._deliver = guarded_deliver


# --- celery's consumer ----------------------------------------------------------------------------
def _message_raw(message: Any) -> str:
    raw = getattr(message, "_raw", None)
    if raw is not None:
        return _raw_of(raw)
    return _raw_of({"headers": getattr(message, "headers", None),
                    "body": repr(getattr(message, "body", None))})


class RefusingConsumer(Consumer):
    """Celery's consumer, recording every message it would drop (see the module's doc)."""

    def _refuse(self, message: Any, reason: str) -> None:
        info = getattr(message, "delivery_info", None) or {}
        queue = info.get("routing_key") or info.get("queue")
        headers = message.headers if isinstance(message.headers, dict) else {}
        token = headers.get("id") if isinstance(headers.get("id"), str) else None
        if refuse(queue, _message_raw(message), reason, token):
            message.ack_log_error(log, self.connection_errors)
        # kept nowhere: not acknowledged, it returns after the visibility timeout

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        handler = super().create_task_handler(*args, **kwargs)

        def on_task_received(message: Any) -> Any:
            problem = body_problem(message)
            if problem is not None:
                return self._refuse(message, problem)
            try:
                return handler(message)
            except self.connection_errors:
                raise  # celery reconnects; an unacknowledged message comes back
            except Exception as e:  # anything else would end the worker
                log.exception("celery cannot take a message")
                if message.acknowledged:
                    return None  # settled already (acknowledged or rejected): nothing to keep
                return self._refuse(message, f"celery cannot take the message: "
                                             f"{type(e).__name__}: {str(e)[:200]}")

        return on_task_received

    def on_unknown_message(self, body: Any, message: Any) -> None:
        self._refuse(message, "not a task message (no task name)")

    def on_unknown_task(self, body: Any, message: Any, exc: Exception) -> None:
        name = message.headers.get("task") if isinstance(message.headers, dict) else None
        self._refuse(message, f"unknown task {str(name)[:80]!r}")

    def on_invalid_task(self, body: Any, message: Any, exc: Exception) -> None:
        self._refuse(message, f"invalid task message: {type(exc).__name__}: {exc}")

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        self._refuse(message, f"cannot decode the message: {type(exc).__name__}: {exc}")
