"""Redis list entries for the message-path fuzz (tests/common/queue/test_envelope.py and, through
a real worker, tests/reliability/test_message_fuzz.py): hypothesis strategies of entry texts,
and :func:`read`, which does with one what a worker's main process does, with kombu's and
celery's own classes."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from celery import Celery
from celery.exceptions import InvalidTaskError
from celery.worker.request import Request
from hypothesis import strategies as st
from kombu import Connection
from kombu.serialization import prepare_accept_content
from kombu.transport.virtual.base import Channel, Message
from kombu.utils.json import dumps as kombu_dumps
from kombu.utils.json import loads as kombu_loads

from common.queue.envelope import (
    MAX_ENTRY_CHARS,
    MAX_PARSE_CHARS,
    body_problem,
    bounded_loads,
    entry_problem,
)
from common.queue.messages import InvalidMessage, parse_args
from services.stages import PIPELINE

TASK = "onsei.asr.process_shard"
GOOD_KW = {"until": "asr", "force": False}
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
APP = Celery("entries-test", set_as_current=False)
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


def good_entry(args: Any = (0,), kwargs: Any = None, embed: Any = None) -> dict[str, Any]:
    """The real message with its own ids and tag, and its body's arguments replaced."""
    entry = json.loads(REAL)
    tid = str(uuid.uuid4())
    entry["headers"].update(id=tid, root_id=tid)
    entry["properties"].update(correlation_id=tid, delivery_tag=str(uuid.uuid4()))
    body = [list(args), GOOD_KW if kwargs is None else kwargs, EMBED if embed is None else embed]
    entry["body"] = base64.b64encode(json.dumps(body).encode()).decode()
    return entry


class _Channel:
    """What kombu's message asks of its channel: the body's codec."""

    @staticmethod
    def decode_body(body: str, encoding: str | None = None) -> Any:
        return Channel.decode_body(Channel, body, encoding)  # type: ignore[arg-type]


def read(text: str, task_check: bool = False) -> str | None:
    """Everything the worker's main process does with a popped entry, in order: the reason it
    is refused, or None when celery took it. ``task_check``: the task's own argument check
    too (the pool process's, recorded the same way)."""
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
    if task_check:
        try:
            parse_args(PIPELINE, "asr", req.args, req.kwargs)
        except InvalidMessage as e:
            return str(e)
    return None


def check(text: str) -> str | None:
    """``read``, and what it may answer: a reason of one line, or None."""
    out = read(text)
    assert out is None or (isinstance(out, str) and out and "\n" not in out), out
    return out


# --- strategies: each gives the text of one list entry ------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)

random_bytes = st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace"))  # bytes_to_str
any_json = json_values.map(json.dumps)


def _deep(kind: str, n: int, where: str, closed: bool) -> str:
    deep = {"list": "[", "object": '{"a":', "mixed": '[{"a":'}[kind] * n
    if closed and kind == "list":
        deep += "]" * n
    if where == "entry":
        return deep
    marker = '"@@deep@@"'
    if where == "body":
        entry = good_entry()
        entry["body"] = base64.b64encode(deep.encode()).decode()
        return json.dumps(entry)
    if where == "args":
        entry = good_entry(args=["@@deep@@"])
        body = base64.b64decode(entry["body"]).replace(marker.encode(), deep.encode())
        entry["body"] = base64.b64encode(body).decode()
        return json.dumps(entry)
    entry = good_entry()
    entry["headers"]["argsrepr"] = "@@deep@@"
    return json.dumps(entry).replace(marker, deep)


deep_nesting = st.builds(_deep, st.sampled_from(["list", "object", "mixed"]),
                         st.integers(1, 300_000),
                         st.sampled_from(["entry", "body", "args", "header"]), st.booleans())


def _huge(size: int, where: str) -> str:
    big = "x" * size
    if where == "entry":
        return big
    entry = good_entry(args=[big] if where == "args" else (0,))
    if where == "header":
        entry["headers"]["argsrepr"] = big
    elif where == "body":
        entry["body"] = base64.b64encode(big.encode()).decode()
    elif where == "tag":
        entry["properties"]["delivery_tag"] = big
    return json.dumps(entry)


HUGE_SIZES = [MAX_ENTRY_CHARS - 2000, MAX_ENTRY_CHARS + 1, 5 << 20, MAX_PARSE_CHARS + 1]
huge_strings = st.builds(_huge, st.sampled_from(HUGE_SIZES),
                         st.sampled_from(["entry", "header", "body", "args", "tag"]))

HEADERS = ("task", "id", "shadow", "eta", "expires", "group", "group_index", "retries",
           "timelimit", "root_id", "parent_id", "argsrepr", "kwargsrepr", "origin",
           "ignore_result", "replaced_task_nesting", "stamped_headers", "stamps", "lang",
           "compression", "callbacks", "chain", "chord", "errbacks", "link", "content_type")
PATHS = [("properties",), ("properties", "delivery_tag"), ("properties", "delivery_info"),
         ("properties", "delivery_info", "exchange"),
         ("properties", "delivery_info", "routing_key"), ("properties", "body_encoding"),
         ("properties", "priority"), ("properties", "reply_to"),
         ("properties", "correlation_id"), ("headers",), ("body",), ("content-type",),
         ("content-encoding",)] + [("headers", h) for h in HEADERS]
_DROP = object()


def _mutated(path: tuple[str, ...], value: Any) -> str:
    entry = good_entry()
    node = entry
    for k in path[:-1]:
        node = node[k]
    if value is _DROP:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return json.dumps(entry)


def envelope_types(paths: list[tuple[str, ...]] = PATHS) -> st.SearchStrategy[str]:
    """A real message with one field (of ``paths``) replaced by any JSON value, or removed."""
    return st.builds(_mutated, st.sampled_from(paths), json_values | st.just(_DROP))


def _body(args: Any, kwargs: Any, embed: Any, shape: int) -> str:
    body = [[args, kwargs, embed], [args], args, [[args], kwargs, embed, embed]][shape]
    entry = good_entry()
    entry["body"] = base64.b64encode(json.dumps(body).encode()).decode()
    return json.dumps(entry)


body_types = st.builds(_body, json_values, json_values, json_values, st.integers(0, 3))
