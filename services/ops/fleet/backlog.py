"""A stage's backlog as the fleet sees it: messages waiting in its Redis queue plus those in
flight (delivered, not yet acked). Counting in-flight shards keeps the last workers alive while
they finish the last shards, instead of cancelling them when the list runs empty."""

from __future__ import annotations

import json
from collections.abc import Callable

# kombu's Redis transport: priority sub-queues are "<queue>\x06\x16<p>"; unacked messages sit
# in the "unacked" hash as JSON [payload, exchange, routing_key].
PRIORITY_SEP = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)
UNACKED_KEY = "unacked"

BacklogFn = Callable[[str], int]


def redis_backlog(url: str) -> BacklogFn:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=10)

    def backlog(queue: str) -> int:
        names = [queue] + [f"{queue}{PRIORITY_SEP}{p}" for p in PRIORITY_STEPS]
        pipe = client.pipeline()
        for n in names:
            pipe.llen(n)
        waiting = sum(int(x) for x in pipe.execute())
        in_flight = 0
        for raw in client.hvals(UNACKED_KEY):  # at most one entry per worker process
            try:
                _payload, _exchange, routing_key = json.loads(raw)[:3]
            except (ValueError, TypeError):
                continue
            in_flight += routing_key == queue
        return waiting + in_flight

    return backlog
