"""Reading a Redis list entry as the worker's main process does (common/queue/envelope.py),
fuzzed: whatever an entry holds (random bytes, JSON nested 300,000 deep, strings of 32 MiB,
any field of a real message replaced by a value of another type), reading it returns a reason
or None and never raises; what it lets through, kombu and celery can build a task request of.
The same campaign against a real worker is tests/reliability/test_message_fuzz.py."""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kombu.utils.json import loads as kombu_loads

from common.queue import envelope, poison
from common.queue.envelope import MAX_DEPTH, MAX_ENTRY_CHARS, MAX_PARSE_CHARS, Unparsed
from tests.common.queue import entries
from tests.common.queue.entries import check, good_entry


# --- the cases the issue names -------------------------------------------------------------------
def test_the_two_reproductions_are_refused_with_why() -> None:
    assert "nested deeper than the parser can go" in check("[" * 200_000)
    nested_body = {**good_entry(), "body": base64.b64encode(b"[" * 100_000).decode()}
    assert "body is not JSON: nested deeper" in check(json.dumps(nested_body))


def test_a_real_message_passes() -> None:
    assert check(json.dumps(good_entry())) is None


def test_a_retried_message_passes() -> None:
    """A retry's message carries celery's own eta (and may carry expires, time limits)."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    m = entries.APP.amqp.as_task_v2("t-1", entries.TASK, args=[0], kwargs=entries.GOOD_KW,
                                    eta=now + timedelta(seconds=5),
                                    expires=now + timedelta(hours=1), retries=2,
                                    time_limit=600, soft_time_limit=500)
    entry = good_entry()
    entry["headers"] = {**m.headers, "id": entry["headers"]["id"]}
    assert isinstance(entry["headers"]["eta"], str) and entry["headers"]["retries"] == 2
    assert check(json.dumps(entry)) is None


@pytest.mark.parametrize("depth,ok", [(MAX_DEPTH - 3, True), (MAX_DEPTH + 1, False)])
def test_nesting_bound_in_args(depth: int, ok: bool) -> None:
    args = [json.loads("[" * depth + "]" * depth)]
    assert (check(json.dumps(good_entry(args=args))) is None) is ok


def test_size_bounds() -> None:
    big = {**good_entry(), "pad": "x" * MAX_ENTRY_CHARS}
    assert "more than 1,048,576" in check(json.dumps(big))
    unparsed = envelope.bounded_loads("x" * (MAX_PARSE_CHARS + 1))
    assert isinstance(unparsed, Unparsed) and "more than" in unparsed.reason


@pytest.mark.parametrize("where,value,words", [
    (("properties", "delivery_tag"), ["a"], "delivery tag is not a string"),
    (("properties", "delivery_info"), None, "no delivery_info"),
    (("properties", "priority"), "high", "priority is not a whole number"),
    (("properties", "reply_to"), 5, "reply_to is not a string"),
    (("headers", "compression"), "application/x-gzip", "compressed"),
    (("headers", "task"), ["t"], "task name is not a string"),
    (("headers", "id"), None, "no task id"),
    (("headers", "retries"), "1", "retries is not a whole number"),
    (("headers", "timelimit"), 5, "timelimit is not [soft, hard]"),
    (("headers", "timelimit"), [-1, None], "timelimit is not [soft, hard]"),
    (("headers", "stamps"), [], "stamps is not a mapping"),
    (("headers", "chain"), [{"task": "x"}], "links other tasks (chain)"),
    (("content-type",), 5, "content-type is not a string"),
    (("body",), 5, "body is not a string"),
])
def test_wrong_types_refused(where: tuple[str, ...], value: Any, words: str) -> None:
    entry = good_entry()
    *path, last = where
    node = entry
    for k in path:
        node = node[k]
    node[last] = value
    assert words in (check(json.dumps(entry)) or "")


def test_linked_tasks_in_the_body_refused() -> None:
    embed = {"callbacks": [{"task": "celery.ping"}], "errbacks": None, "chain": None,
             "chord": None}
    assert "links other tasks (callbacks)" in check(json.dumps(good_entry(embed=embed)))


@pytest.mark.parametrize("ctype,encoding,words", [
    ("application/x-python-serialize", "binary", "not accepted: ContentDisallowed"),
    ("application/data", "binary", "not [args, kwargs, options]"),
    ("application/json", "zlib_codec", "content-encoding 'zlib_codec' is not utf-8"),
])
def test_content_types_other_than_json_refused(ctype: str, encoding: str, words: str) -> None:
    entry = {**good_entry(), "content-type": ctype, "content-encoding": encoding}
    assert words in (check(json.dumps(entry)) or "")


@pytest.mark.parametrize("text,words", [
    ("not json {", "not JSON"),
    ("[1, 2]", "JSON list"),
    ('{"properties": {}}', "no properties"),
])
def test_entries_that_are_no_message(text: str, words: str) -> None:
    assert words in (check(text) or "")


@pytest.mark.parametrize("change,words", [
    ({"headers": "h"}, "headers are not a mapping"),
    ({"body": "@@ not base64 @@x"}, "not valid base64"),
    ({"body": base64.b64encode(b"not json").decode()}, "body is not JSON"),
    ({"body": base64.b64encode(b"[1, 2]").decode()}, "not [args, kwargs, options]"),
    ({"body": base64.b64encode(b"[[1], [], {}]").decode()}, "not [args, kwargs, options]"),
])
def test_messages_that_are_no_task(change: dict[str, Any], words: str) -> None:
    assert words in (check(json.dumps({**good_entry(), **change})) or "")


def test_unknown_body_encoding() -> None:
    entry = good_entry()
    entry["properties"]["body_encoding"] = "rot13"
    assert "unknown body encoding 'rot13'" in (check(json.dumps(entry)) or "")


def test_protocol_one_refused() -> None:
    entry = good_entry()
    del entry["headers"]["task"]
    assert "no task name" in check(json.dumps(entry))


# --- the fuzz ------------------------------------------------------------------------------------
FUZZ = settings(max_examples=1500, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


FAMILIES: dict[str, tuple[st.SearchStrategy[str], int]] = {
    "random-bytes": (entries.random_bytes, 1500), "any-json": (entries.any_json, 1000),
    "deep-nesting": (entries.deep_nesting, 300), "huge-strings": (entries.huge_strings, 60),
    "envelope-types": (entries.envelope_types(), 1200), "body-types": (entries.body_types, 1200)}


# The default run draws a quarter of each family's examples (seconds, not most of a minute);
# ``-m slow`` draws them all.
@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("share", [pytest.param(4, id="quarter"),
                                   pytest.param(1, marks=pytest.mark.slow, id="all")])
def test_fuzz(name: str, share: int) -> None:
    family, examples = FAMILIES[name]

    @settings(FUZZ, max_examples=max(1, examples // share))
    @given(family)
    def read_one(text: str) -> None:
        check(text)

    read_one()


def test_huge_and_deep_entries_are_refused() -> None:
    """The size and depth bounds, for each place the fuzz puts a huge string or deep nesting."""
    for where in ("entry", "header", "body", "args", "tag"):
        assert entries.read(entries._huge(MAX_ENTRY_CHARS + 1, where)), where
        assert entries.read(entries._deep("list", 10_000, where if where != "tag" else "entry",
                                          True)), where


def test_an_entry_as_deep_as_the_parser_goes_is_recorded_as_it_was() -> None:
    """Parsed at the recursion limit, it could not be serialized again for its record."""
    for depth in range(sys.getrecursionlimit(), 0, -5):
        text = "[" * depth + "]" * depth
        value = envelope.bounded_loads(text, kombu_loads)
        if not isinstance(value, Unparsed):
            break
    assert depth > MAX_DEPTH
    assert envelope.entry_problem(value) == "the entry is a JSON list, not a message"
    assert poison._raw_of(value) == text
    assert envelope.entry_problem(envelope.bounded_loads("3")) == \
        "the entry is a JSON int, not a message"


def test_nested_over_is_iterative() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(100_000):  # far past the recursion limit
        node.append([])
        node = node[0]
    assert envelope.nested_over(deep, MAX_DEPTH)
    assert not envelope.nested_over([[1], {"a": [2]}], 3)
    assert envelope.nested_over([[1], {"a": [2]}], 2)
