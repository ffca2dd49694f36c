"""Refusing poison messages (common/queue/poison.py): what counts as one, and where it is kept
when the ledger cannot take it. The worker-level campaign is tests/reliability/test_poison.py."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest

from common.queue import poison

GOOD_BODY = json.dumps([[1], {"until": "asr", "force": False}, {}]).encode()
GOOD = {"body": base64.b64encode(GOOD_BODY).decode(), "headers": {"task": "t", "id": "i"},
        "properties": {"delivery_tag": "x", "body_encoding": "base64"}}


@pytest.mark.parametrize("entry,words", [
    (poison._Unparsed("not json {"), "not JSON"),
    ([1, 2], "JSON list"),
    ({**GOOD, "properties": {}}, "no properties"),
    ({**GOOD, "headers": "h"}, "headers are not a mapping"),
    ({**GOOD, "body": "@@ not base64 @@x"}, "not valid base64"),
    ({**GOOD, "properties": {"delivery_tag": "x", "body_encoding": "rot13"}},
     "unknown body encoding"),
])
def test_entries_that_are_no_message(entry, words) -> None:
    assert words in (poison.entry_problem(entry) or "")


def test_a_real_entry_passes() -> None:
    assert poison.entry_problem(GOOD) is None


@pytest.mark.parametrize("body,ok", [
    (GOOD_BODY, True), (b"not json", False), (b"[1, 2]", False), (b'[[1], [], {}]', False),
])
def test_task_bodies(body, ok) -> None:
    msg = SimpleNamespace(headers={"task": "t"}, content_type="application/json", body=body)
    assert (poison.body_problem(msg) is None) is ok


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
