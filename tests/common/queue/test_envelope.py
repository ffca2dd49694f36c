"""Reading a Redis list entry as the worker's main process does (common/queue/envelope.py),
fuzzed: whatever an entry holds (random bytes, JSON nested 300,000 deep, strings of 40 MiB,
any field of a real message replaced by a value of another type), reading it returns a reason
or None and never raises; what it lets through, kombu and celery can build a task request of.
The same campaign against a real worker is tests/reliability/test_message_fuzz.py."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from celery import Celery
from celery.exceptions import InvalidTaskError
from celery.worker.request import Request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kombu import Connection
from kombu.serialization import prepare_accept_content
from kombu.transport.virtual.base import Channel, Message
from kombu.utils.json import dumps as kombu_dumps
from kombu.utils.json import loads as kombu_loads

from common.queue import envelope
from common.queue.envelope import (
    MAX_DEPTH,
    MAX_ENTRY_CHARS,
    MAX_PARSE_CHARS,
    Unparsed,
    body_problem,
    bounded_loads,
    entry_problem,
)

TASK = "onsei.asr.process_shard"
GOOD_KW = {"until": "asr", "force": False}
APP = Celery("envelope-test", set_as_current=False)
ACCEPT = prepare_accept_content(["json"])


@APP.task(name=TASK, bind=True, shared=False)
def _task(self, /, *args, **kwargs):  # the stage task's signature
    return None


def _real_entry() -> str:
    """A task message as kombu's Redis channel stores it (celery's and kombu's own code)."""
    m = APP.amqp.as_task_v2(str(uuid.uuid4()), TASK, args=[0], kwargs=GOOD_KW)
    with Connection("memory://") as conn:
        ch = conn.default_channel
        msg = ch.prepare_message(json.dumps(m.body), 0, "application/json", "utf-8", m.headers,
                                 m.properties)
        ch._inplace_augment_message(msg, "", "asr")
    return json.dumps(msg)


REAL = _real_entry()
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def good_entry(args: Any = (0,), kwargs: Any = None, embed: Any = None) -> dict[str, Any]:
    """The real message with its body's arguments replaced."""
    entry = json.loads(REAL)
    body = [list(args), GOOD_KW if kwargs is None else kwargs, EMBED if embed is None else embed]
    entry["body"] = base64.b64encode(json.dumps(body).encode()).decode()
    return entry


class _Channel:
    """What kombu's message asks of its channel: the body's codec."""

    @staticmethod
    def decode_body(body: str, encoding: str | None = None) -> Any:
        return Channel.decode_body(Channel, body, encoding)  # type: ignore[arg-type]


def read(text: str) -> str | None:
    """Everything the worker's main process does with a popped entry, in order, with kombu's
    and celery's own classes: the reason it is refused, or None when celery took it."""
    entry = bounded_loads(text, kombu_loads)
    problem = entry_problem(entry)
    if problem is not None:
        return problem
    msg = Message(entry, channel=_Channel())
    msg.accept = ACCEPT  # as kombu's consumer sets it for celery (accept_content)
    info = msg.delivery_info
    # kombu keeps an unacknowledged copy and restores it through the same parser
    copy = bounded_loads(kombu_dumps([msg._raw, info["exchange"], info["routing_key"]]),
                         kombu_loads)
    assert isinstance(copy, list) and len(copy) == 3, copy
    problem = body_problem(msg)
    if problem is not None:
        return problem
    if msg.headers["task"] not in APP.tasks:
        return "unknown task"  # celery's on_unknown_task: refused by the consumer
    try:
        req = Request(msg, app=APP, task=APP.tasks[msg.headers["task"]], body=None,
                      decoded=False)
    except InvalidTaskError:
        return "invalid task"  # celery's on_invalid_task: refused by the consumer
    assert isinstance(req.args, list) and isinstance(req.kwargs, dict)
    req.time_limits, req.eta, req.expires, req.stamps, req.argsrepr  # noqa: B018
    return None


def check(text: str) -> str | None:
    """``read``, and what it may answer: a reason of one line, or None."""
    out = read(text)
    assert out is None or (isinstance(out, str) and out and "\n" not in out), out
    return out


# --- the cases the issue names -------------------------------------------------------------------
def test_the_two_reproductions_are_refused_with_why() -> None:
    assert "nested deeper than the parser can go" in check("[" * 200_000)
    nested_body = {**good_entry(), "body": base64.b64encode(b"[" * 100_000).decode()}
    assert "body is not JSON: nested deeper" in check(json.dumps(nested_body))


def test_a_real_message_passes() -> None:
    assert check(json.dumps(good_entry())) is None


@pytest.mark.parametrize("depth,ok", [(MAX_DEPTH - 3, True), (MAX_DEPTH + 1, False)])
def test_nesting_bound_in_args(depth: int, ok: bool) -> None:
    args = [json.loads("[" * depth + "]" * depth)]
    assert (check(json.dumps(good_entry(args=args))) is None) is ok


def test_size_bounds() -> None:
    big = {**good_entry(), "pad": "x" * MAX_ENTRY_CHARS}
    assert "more than 1,048,576" in check(json.dumps(big))
    unparsed = bounded_loads("x" * (MAX_PARSE_CHARS + 1))
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
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(data: bytes) -> None:
    check(data.decode("utf-8", "replace"))  # as kombu's bytes_to_str hands it on


@FUZZ
@given(json_values)
def test_fuzz_any_json(value: Any) -> None:
    check(json.dumps(value))


def _nested(kind: str, n: int) -> str:
    opener = {"list": "[", "object": '{"a":', "mixed": '[{"a":'}[kind]
    return opener * n


@settings(FUZZ, max_examples=300)
@given(st.sampled_from(["list", "object", "mixed"]), st.integers(1, 300_000),
       st.sampled_from(["entry", "body", "args", "header"]), st.booleans())
def test_fuzz_deep_nesting(kind: str, n: int, where: str, closed: bool) -> None:
    deep = _nested(kind, n)
    if closed and kind == "list":
        deep += "]" * n
    if where == "entry":
        check(deep)
        return
    entry = good_entry()
    if where == "body":
        entry["body"] = base64.b64encode(deep.encode()).decode()
        check(json.dumps(entry))
        return
    marker = '"@@deep@@"'
    if where == "args":
        entry = good_entry(args=["@@deep@@"])
        body = base64.b64decode(entry["body"]).replace(marker.encode(), deep.encode())
        entry["body"] = base64.b64encode(body).decode()
        check(json.dumps(entry))
        return
    entry["headers"]["argsrepr"] = "@@deep@@"
    text = json.dumps(entry).replace(marker, deep)
    check(text)


@settings(FUZZ, max_examples=60)
@given(st.sampled_from([MAX_ENTRY_CHARS - 2000, MAX_ENTRY_CHARS + 1, 5 << 20,
                        MAX_PARSE_CHARS + 1]),
       st.sampled_from(["entry", "header", "body", "args", "tag"]))
def test_fuzz_huge_strings(size: int, where: str) -> None:
    big = "x" * size
    if where == "entry":
        check(big)
        return
    entry = good_entry(args=[big] if where == "args" else (0,))
    if where == "header":
        entry["headers"]["argsrepr"] = big
    elif where == "body":
        entry["body"] = base64.b64encode(big.encode()).decode()
    elif where == "tag":
        entry["properties"]["delivery_tag"] = big
    check(json.dumps(entry))


_PATHS = [("properties",), ("properties", "delivery_tag"), ("properties", "delivery_info"),
          ("properties", "delivery_info", "exchange"), ("properties", "delivery_info",
                                                          "routing_key"),
          ("properties", "body_encoding"), ("properties", "priority"),
          ("properties", "reply_to"), ("properties", "correlation_id"), ("headers",),
          ("body",), ("content-type",), ("content-encoding",)] + [
    ("headers", h) for h in ("task", "id", "shadow", "eta", "expires", "group", "group_index",
                             "retries", "timelimit", "root_id", "parent_id", "argsrepr",
                             "kwargsrepr", "origin", "ignore_result", "replaced_task_nesting",
                             "stamped_headers", "stamps", "lang", "compression", "callbacks",
                             "chain", "chord", "errbacks", "link", "content_type")]


@FUZZ
@given(st.sampled_from(_PATHS), json_values | st.just("@@drop@@"))
def test_fuzz_wrong_types_in_the_envelope(path: tuple[str, ...], value: Any) -> None:
    entry = good_entry()
    node = entry
    for k in path[:-1]:
        node = node[k]
    if value == "@@drop@@":
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    check(json.dumps(entry))


@FUZZ
@given(json_values, json_values, json_values, st.integers(0, 3))
def test_fuzz_wrong_types_in_the_body(args: Any, kwargs: Any, embed: Any, shape: int) -> None:
    body = [[args, kwargs, embed], [args], args, [[args], kwargs, embed, embed]][shape]
    entry = {**good_entry(), "body": base64.b64encode(json.dumps(body).encode()).decode()}
    check(json.dumps(entry))


def test_nested_over_is_iterative() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(100_000):  # far past the recursion limit
        node.append([])
        node = node[0]
    assert envelope.nested_over(deep, MAX_DEPTH)
    assert not envelope.nested_over([[1], {"a": [2]}], 3)
    assert envelope.nested_over([[1], {"a": [2]}], 2)
