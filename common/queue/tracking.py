"""Redis bookkeeping beside the broker: which shards are queued, running, how often delivered.

Only a mirror for speed (docs/architecture.md, the ledger): the ledger in the object store is the
truth. Every call is best effort; with Redis away, or a broker that is not Redis, the methods return
empty answers and nothing fails. Keys live in the broker's own Redis DB, so flushing it clears them
too.

- ``onsei:queued:<stage>``  set of shard ids with a message on the way (enqueue / hand-on add,
  the task removes when it ends: done, skipped or dead-lettered).
- ``onsei:running:<stage>`` hash shard id -> JSON {host, pid, started}.
- ``onsei:attempts:<stage>:<id>`` delivery counter (counted at task start, so crashes count).
- ``onsei:sick:<stage>`` hash worker node -> JSON {reason, at}: a worker that stopped for a
  fault of its node (common/queue/sick.py); cleared when that node finishes a shard again.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from common.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
D = TypeVar("D")


def queued_key(stage: str) -> str:
    return f"onsei:queued:{stage}"


def running_key(stage: str) -> str:
    return f"onsei:running:{stage}"


def attempts_key(stage: str, shard_id: int) -> str:
    return f"onsei:attempts:{stage}:{shard_id}"


def sick_key(stage: str) -> str:
    return f"onsei:sick:{stage}"


def redis_client(settings: Settings, timeout: float = 2.0) -> Any | None:
    """A redis-py client on the broker's URL, or None when the broker is not Redis."""
    url = settings.broker_url.get_secret_value()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    import redis

    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


class Tracker:
    """Queued / running / attempts bookkeeping for one broker."""

    def __init__(self, settings: Settings, client: Any | None = None) -> None:
        self.settings = settings
        self._client = client
        self._made = client is not None

    @property
    def client(self) -> Any | None:
        if not self._made:
            self._client = redis_client(self.settings)
            self._made = True
        return self._client

    def _safe(self, fn: Callable[[Any], T], default: D) -> T | D:
        if self.client is None:
            return default
        try:
            return fn(self.client)
        except Exception as e:  # noqa: BLE001 - Redis down: the ledger still holds the truth
            log.debug("tracking unavailable: %s", e)
            return default

    def available(self) -> bool:
        return bool(self._safe(lambda c: c.ping(), False))

    # --- queued ---------------------------------------------------------------------------------
    def add_queued(self, stage: str, ids: Iterable[int], pipe: Any | None = None) -> None:
        ids = list(ids)
        if not ids:
            return
        if pipe is not None:
            pipe.sadd(queued_key(stage), *ids)
            return
        self._safe(lambda c: c.sadd(queued_key(stage), *ids), None)

    def unqueue(self, stage: str, shard_id: int) -> None:
        """Its message is gone without a run (refused)."""
        self._safe(lambda c: c.srem(queued_key(stage), shard_id), None)

    def queued_ids(self, stage: str) -> set[int]:
        return {int(x) for x in self._safe(lambda c: c.smembers(queued_key(stage)), set())}

    def clear_queued(self, stage: str) -> None:
        self._safe(lambda c: c.delete(queued_key(stage)), None)

    # --- running --------------------------------------------------------------------------------
    def start(self, stage: str, shard_id: int, ttl: int) -> int:
        """Mark running and count this delivery; returns the attempt number (1 when unknown)."""
        info = json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                           "started": time.time()})

        def go(c: Any) -> int:
            p = c.pipeline(transaction=False)
            p.hset(running_key(stage), str(shard_id), info)
            p.incr(attempts_key(stage, shard_id))
            p.expire(attempts_key(stage, shard_id), ttl)
            return int(p.execute()[1])

        return self._safe(go, 1)

    def finish(self, stage: str, shard_id: int, clear_attempts: bool,
               queued_next: str | None = None, node: str | None = None) -> None:
        """The task ended for good (done, skipped, dead): it is neither running nor queued.
        ``queued_next``: the stage it was just handed to, marked queued in the same round trip
        (one fewer per shard: docs/operations.md, "Scale"); ``node``: the worker, not sick."""

        def go(c: Any) -> None:
            p = c.pipeline(transaction=False)
            p.hdel(running_key(stage), str(shard_id))
            if node:
                p.hdel(sick_key(stage), node)
            p.srem(queued_key(stage), shard_id)
            if clear_attempts:
                p.delete(attempts_key(stage, shard_id))
            if queued_next is not None:
                p.sadd(queued_key(queued_next), shard_id)
            p.execute()

        self._safe(go, None)

    def mark_sick(self, stage: str, node: str, reason: str) -> None:
        info = json.dumps({"reason": reason[:500], "at": time.time()})
        self._safe(lambda c: c.hset(sick_key(stage), node, info), None)

    def sick(self, stage: str, max_age: float = 86400.0) -> dict[str, dict[str, Any]]:
        """Workers of ``stage`` that stopped for their node's fault in the last ``max_age``
        seconds and finished no shard since: node -> {reason, at}."""
        now, out = time.time(), {}
        for k, v in self._safe(lambda c: c.hgetall(sick_key(stage)), {}).items():
            try:
                info = json.loads(v)
                if now - float(info["at"]) <= max_age:
                    out[k.decode() if isinstance(k, bytes) else str(k)] = info
            except (ValueError, KeyError, TypeError):
                continue
        return out

    def stop_running(self, stage: str, shard_id: int) -> None:
        """Not running any more but still queued (a retry is on its way)."""
        self._safe(lambda c: c.hdel(running_key(stage), str(shard_id)), None)

    def uncount(self, stage: str, shard_id: int) -> None:
        """Handed back without an outcome (preempted, or its outcome could not be written):
        not running, and this delivery does not count as an attempt."""

        def go(c: Any) -> None:
            c.hdel(running_key(stage), str(shard_id))
            if int(c.decr(attempts_key(stage, shard_id))) <= 0:
                c.delete(attempts_key(stage, shard_id))

        self._safe(go, None)

    def running(self, stage: str) -> dict[int, dict[str, Any]]:
        raw: dict[Any, Any] = self._safe(lambda c: c.hgetall(running_key(stage)), {})
        out: dict[int, dict[str, Any]] = {}
        for k, v in raw.items():
            try:
                out[int(k)] = json.loads(v)
            except ValueError:
                continue
        return out

    def attempts(self, stage: str, shard_id: int) -> int:
        v = self._safe(lambda c: c.get(attempts_key(stage, shard_id)), None)
        return int(v) if v else 0

    def settle(self, task_id: str, unacked: str = "unacked",
               index: str = "unacked_index") -> int:
        """Remove ``task_id``'s message from kombu's unacknowledged set (the hash ``unacked``,
        tag -> [message, exchange, routing key], and its index): for a task whose outcome is
        written and handed on while the broker was away, whose own ack was then lost with the
        old connection. Left there, it would come back after the visibility timeout only to
        be skipped. Returns how many were removed."""

        def go(c: Any) -> int:
            n = 0
            for tag, raw in c.hscan_iter(unacked):
                try:
                    if json.loads(raw)[0]["headers"]["id"] != task_id:
                        continue
                except (ValueError, KeyError, IndexError, TypeError):
                    continue
                p = c.pipeline(transaction=False)
                p.zrem(index, tag)
                p.hdel(unacked, tag)
                p.execute()
                n += 1
            return n

        return self._safe(go, 0)

    # --- broker queues ----------------------------------------------------------------------------
    def queue_length(self, stage: str) -> int | None:
        """Messages waiting in the stage's Redis list (None: unknown)."""
        return self._safe(lambda c: int(c.llen(stage)), None)

    def unacked_count(self, stage: str) -> int | None:
        """Messages reserved by workers (running or prefetched) for the stage's queue."""

        def go(c: Any) -> int:
            n = 0
            for v in c.hvals("unacked"):
                try:
                    if json.loads(v)[2] == stage:  # [message, exchange, routing_key]
                        n += 1
                except (ValueError, IndexError, TypeError):
                    continue
            return n

        return self._safe(go, None)
