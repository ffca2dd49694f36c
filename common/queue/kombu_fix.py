"""Keep a worker alive when Redis goes away while it holds unacknowledged messages.

kombu 5.x (seen with 5.7.0) kills the worker on a broker outage: celery's consumer closes the
lost connection (``Consumer.on_connection_error_after_connected`` -> ``Connection.release``),
the channel close restores the unacked messages (``QoS.restore_unacked_once``), that needs a new
Redis client, and the pool is built from ``Channel._connparams``, which reads
``self.connection.client.hostname`` after the transport was detached from its connection
(``client`` is None). The ``AttributeError`` is not a connection error, so
``maybe_close_channel`` does not swallow it and celery stops with "Unrecoverable error".
(Upstream: celery/kombu#582 and #970 report the same trace.)

The workaround raises a Redis ``ConnectionError`` there instead: the channel close ignores it,
celery reconnects as it does for any outage, and the messages stay in Redis's unacked hash,
from which ``restore_visible`` hands them back after the visibility timeout. Nothing is lost.
"""

from __future__ import annotations

from typing import Any

_PATCHED = "_onsei_detached_transport_fix"


def install() -> None:
    """Idempotent; a no-op when kombu's Redis transport (or redis-py) is not installed."""
    try:
        import redis.exceptions
        from kombu.transport import redis as kredis
    except ImportError:  # pragma: no cover - RabbitMQ-only deployments
        return
    channel = kredis.Channel
    original = channel._connparams
    if getattr(original, _PATCHED, False):
        return

    def _connparams(self: Any, asynchronous: bool = False) -> Any:
        if getattr(self.connection, "client", None) is None:
            raise redis.exceptions.ConnectionError(
                "broker connection already closed (transport detached); unacked messages stay "
                "in Redis until the visibility timeout")
        return original(self, asynchronous=asynchronous)

    setattr(_connparams, _PATCHED, True)
    channel._connparams = _connparams
