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
