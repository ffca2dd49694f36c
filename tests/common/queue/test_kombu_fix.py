"""common/queue/kombu_fix.py: closing a channel whose transport was detached (the broker was lost)
with unacked messages must not raise a non-connection error (it would kill the worker)."""

from __future__ import annotations

import pytest
import redis
from kombu import Connection

from common.queue import kombu_fix


def _detached_channel_with_unacked(url: str):
    conn = Connection(url)
    ch = conn.channel()
    ch.qos._delivered["tag-1"] = object()  # a reserved, unacked message
    ch._pool = None  # the pool went with the lost connection
    ch.connection.client = None  # what Connection._do_close_transport leaves behind
    return conn, ch


def test_detached_transport_gives_a_connection_error(private_redis_url: str) -> None:
    kombu_fix.install()
    kombu_fix.install()  # idempotent
    conn, ch = _detached_channel_with_unacked(private_redis_url)
    with pytest.raises(redis.exceptions.ConnectionError):
        ch._connparams()
    assert isinstance(redis.exceptions.ConnectionError("x"), conn.connection_errors)
    conn.maybe_close_channel(ch)  # swallowed like any outage (unpatched: AttributeError)
    assert ch.closed
