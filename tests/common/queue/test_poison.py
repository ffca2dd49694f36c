"""Refusing poison messages (common/queue/poison.py): where one is kept when the ledger cannot
take it. What counts as one is tests/common/queue/test_envelope.py; the worker-level campaign
is tests/reliability/test_poison.py."""

from __future__ import annotations

import pytest

from common.queue import poison


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(poison, "_RECORDERS", {})
    monkeypatch.setattr(poison, "_FALLBACK", {})
    return poison


def test_kept_in_the_ledger_else_in_redis_else_not_let_go(registry) -> None:
    ledger, redis = [], []

    def broken(*_):
        raise OSError("read-only file system")

    registry.register("asr", lambda token, reason, raw: ledger.append((token, reason, raw)),
                      lambda queue, raw: redis.append((queue, raw)))
    assert registry.refuse(None, "junk", "the entry is not JSON")  # one stage: its queue
    assert ledger == [(poison.digest("junk"), "the entry is not JSON", "junk")]
    registry.register("asr", broken, lambda queue, raw: redis.append((queue, raw)))
    assert registry.refuse("asr", "junk2", "why") and redis == [("asr", "junk2")]
    registry.register("asr", broken, broken)
    assert registry.refuse("asr", "junk3", "why") is False  # the caller keeps the message


# --- whatever kombu or celery still raise on a message is a refusal, not the worker's end --------
class _Channel:
    """What kombu's message asks of its channel: the body's codec and the ack."""

    no_ack_consumers = None

    def __init__(self) -> None:
        self.acked: list[str] = []

    @staticmethod
    def decode_body(body, encoding=None):
        from kombu.transport.virtual.base import Channel

        return Channel.decode_body(Channel, body, encoding)

    def basic_ack(self, tag, multiple=False) -> None:
        self.acked.append(tag)


def _recording(registry) -> list[tuple[str, str]]:
    kept: list[tuple[str, str]] = []
    registry.register("asr", lambda token, reason, raw: kept.append((reason, raw)))
    return kept


def test_an_entry_kombu_raises_on_is_refused(registry, monkeypatch) -> None:
    from kombu.transport import redis as kredis

    from tests.common.queue.entries import good_entry

    monkeypatch.setattr(kredis, "loads", kredis.loads)  # kombu as it was after the test
    monkeypatch.setattr(kredis.Transport, "_deliver", kredis.Transport._deliver)
    registry.install()
    kept = _recording(registry)

    class Transport:
        connection_errors, channel_errors = (ConnectionError,), ()

        def __init__(self, exc: Exception) -> None:
            def callback(message):
                raise exc
            self._callbacks = {"asr": callback}

    entry = good_entry()
    assert kredis.Transport._deliver(Transport(KeyError("x")), entry, "asr") is None
    assert kept and kept[0][0] == "kombu cannot take the entry: KeyError: 'x'"
    with pytest.raises(ConnectionError):  # celery reconnects; the message stays in Redis
        kredis.Transport._deliver(Transport(ConnectionError("gone")), entry, "asr")


@pytest.mark.parametrize("settled", [False, True])
def test_a_message_celery_raises_on_is_refused_once(registry, monkeypatch, settled) -> None:
    import json

    from celery.worker.consumer import Consumer
    from kombu.transport.virtual.base import Message

    from tests.common.queue.entries import good_entry

    kept = _recording(registry)
    channel = _Channel()
    msg = Message(json.loads(json.dumps(good_entry())), channel=channel)

    def handler(message):
        if settled:
            message.ack()
        raise TypeError("unforeseen")

    monkeypatch.setattr(Consumer, "create_task_handler", lambda self, *a, **k: handler)
    consumer = object.__new__(poison.RefusingConsumer)
    consumer.connection_errors = (ConnectionError,)
    assert consumer.create_task_handler()(msg) is None
    assert channel.acked == [msg.delivery_tag]  # let go once: by the handler or the refusal
    assert [r for r, _ in kept] == ([] if settled else
                                    ["celery cannot take the message: TypeError: unforeseen"])
