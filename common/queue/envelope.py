"""What a Redis list entry must be before kombu and celery make a task message of it.

kombu's Redis transport parses each entry it pops and builds a message of it; celery's consumer
reads the message's headers and decodes its body, all in the worker's main process. Anything of
that raising there (JSON nested deeper than Python's recursion limit, a header of the wrong type,
a delivery tag that is a list) ends the worker, and a message restored after the crash ends the
next one. The checks here are what those steps need, bounded in time and memory, and they never
raise: each says why the entry or message cannot be taken, or None.

Bounds: an onsei task message is about 1.5 KiB and nests 3 deep (entry, properties,
delivery_info; its body ``[args, kwargs, options]`` too). An entry over :data:`MAX_ENTRY_CHARS`
or nested over :data:`MAX_DEPTH` is refused; one over :data:`MAX_PARSE_CHARS` is not parsed at
all. The parse bound is larger because kombu's own unacknowledged copy of a message
(``[message, exchange, routing key]``, non-ASCII escaped: up to 12 characters for one) goes
through the same parser when it is restored, and must always parse.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kombu.exceptions import ContentDisallowed

MAX_ENTRY_CHARS = 1 << 20
MAX_PARSE_CHARS = 32 << 20
MAX_DEPTH = 16
_SHOWN = 120  # characters of an error message quoted in a reason

# celery runs these after the task (or on its failure) when a message names them: onsei's stages
# hand on by themselves, so a message carrying any is refused rather than let start other tasks
_LINKS = ("callbacks", "errbacks", "chain", "chord", "link", "link_error")
_TEXT_ENCODINGS = ("utf-8", "utf8", "binary", "ascii-8bit", "ascii", "us-ascii")
_STR_HEADERS = ("shadow", "root_id", "parent_id", "group", "argsrepr", "kwargsrepr", "origin",
                "lang", "eta", "expires")


class Unparsed(dict[str, Any]):
    """An entry that was not parsed: empty (kombu's own restore code unpacks what it loads and
    fails as before on it), carrying its text and why to the delivery guard."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__()
        self.text = text
        self.reason = reason


class Parsed(dict[str, Any]):
    """An entry parsed to a JSON object, with its text: a refused entry is recorded as it was
    (never serialized again: JSON nested nearly as deep as the parser goes would not be)."""

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


class ParsedList(list[Any]):
    """An entry parsed to a JSON array, with its text (kombu's own unacknowledged copies of
    messages are arrays)."""

    def __init__(self, value: list[Any], text: str) -> None:
        super().__init__(value)
        self.text = text


def _short(e: BaseException) -> str:
    text = " ".join(f"{type(e).__name__}: {e}".split())  # one line
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def bounded_loads(text: Any, loads: Callable[[str], Any] = json.loads) -> Any:
    """``loads(text)``, or :class:`Unparsed` when it is too long or cannot be parsed (nested
    deeper than the recursion limit included)."""
    if not isinstance(text, str):
        text = repr(text)
    if len(text) > MAX_PARSE_CHARS:
        return Unparsed(text, f"the entry is {len(text):,} characters, more than "
                              f"{MAX_ENTRY_CHARS:,}")
    try:
        value = loads(text)
    except RecursionError:
        return Unparsed(text, "the entry is not JSON: nested deeper than the parser can go")
    except Exception as e:  # noqa: BLE001 - ValueError, MemoryError, an object hook's TypeError
        return Unparsed(text, f"the entry is not JSON: {_short(e)}")
    if type(value) is dict:
        return Parsed(value, text)
    if type(value) is list:
        return ParsedList(value, text)
    return Unparsed(text, f"the entry is a JSON {type(value).__name__}, not a message")


def nested_over(value: Any, limit: int) -> bool:
    """True when ``value`` holds lists or mappings more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return False


def _is_int(v: Any) -> bool:
    return type(v) is int  # bool is an int in Python


def _is_number(v: Any) -> bool:
    return (type(v) is int or type(v) is float) and math.isfinite(v) and v >= 0


def _is_datetime(v: Any) -> bool:
    try:
        datetime.fromisoformat(v)
    except (TypeError, ValueError):
        return False
    return True


def entry_problem(entry: Any) -> str | None:
    """Why a list entry cannot be a message for kombu (None: it can)."""
    from kombu.transport.virtual.base import Channel

    if isinstance(entry, Unparsed):
        return entry.reason
    if isinstance(entry, list):
        return "the entry is a JSON list, not a message"
    if not isinstance(entry, dict):
        return f"the entry is a JSON {type(entry).__name__}, not a message"
    chars = len(getattr(entry, "text", ""))
    if chars > MAX_ENTRY_CHARS:
        return f"the entry is {chars:,} characters, more than {MAX_ENTRY_CHARS:,}"
    if nested_over(entry, MAX_DEPTH):
        return f"the entry nests more than {MAX_DEPTH} deep"
    props = entry.get("properties")
    if not isinstance(props, dict) or "delivery_tag" not in props:
        return "the entry has no properties with a delivery tag"
    if not isinstance(props["delivery_tag"], str) or not props["delivery_tag"]:
        return "the entry's delivery tag is not a string"
    info = props.get("delivery_info")
    if not (isinstance(info, dict) and isinstance(info.get("exchange"), str)
            and isinstance(info.get("routing_key"), str)):
        return "the entry's properties have no delivery_info with an exchange and a routing key"
    if props.get("priority") is not None and not _is_int(props["priority"]):
        return "the entry's priority is not a whole number"
    for field in ("reply_to", "correlation_id"):
        if props.get(field) is not None and not isinstance(props[field], str):
            return f"the entry's {field} is not a string"
    headers = entry.get("headers")
    if not isinstance(headers or {}, dict):
        return "the entry's headers are not a mapping"
    if headers and headers.get("compression") is not None:
        return "the entry's body is compressed (onsei never compresses a message)"
    for field in ("content-type", "content-encoding"):
        if entry.get(field) is not None and not isinstance(entry[field], str):
            return f"the entry's {field} is not a string"
    if (entry.get("content-encoding") or "utf-8").lower() not in _TEXT_ENCODINGS:
        # kombu decodes a body with any Python codec named here (zlib_codec among them)
        return f"the entry's content-encoding {entry['content-encoding'][:40]!r} is not utf-8"
    body, encoding = entry.get("body"), props.get("body_encoding")
    if body is not None and not isinstance(body, str):
        return "the entry's body is not a string"
    if encoding is not None and not isinstance(encoding, str):
        return "the entry's body encoding is not a string"
    if body:
        codec = Channel.codecs.get(encoding) if encoding else None
        if encoding and codec is None:
            return f"unknown body encoding {encoding[:40]!r}"
        if codec is not None:
            try:
                codec.decode(body)
            except Exception as e:  # noqa: BLE001 - binascii.Error, TypeError, ...
                return f"the body is not valid {encoding}: {_short(e)}"
    return None


def headers_problem(headers: Any) -> str | None:
    """Why a message's headers are not celery's task protocol 2 as celery reads them (None:
    they are). Protocol 1 (no task name in the headers) is never sent by onsei."""
    if not isinstance(headers, dict) or "task" not in headers:
        return "not a task message (no task name in its headers)"
    if not isinstance(headers["task"], str):
        return "the task name is not a string"
    if not isinstance(headers.get("id"), str) or not headers["id"]:
        return "the message has no task id"
    for name in _STR_HEADERS:
        if headers.get(name) is not None and not isinstance(headers[name], str):
            return f"header {name} is not a string"
    for name in ("eta", "expires"):
        if headers.get(name) is not None and not _is_datetime(headers[name]):
            return f"header {name} is not an ISO 8601 date and time"
    retries = headers.get("retries")
    if retries is not None and not (_is_int(retries) and retries >= 0):
        return "header retries is not a whole number >= 0"
    for name in ("group_index", "replaced_task_nesting"):
        if headers.get(name) is not None and not _is_int(headers[name]):
            return f"header {name} is not a whole number"
    limit = headers.get("timelimit")
    if limit is not None and not (isinstance(limit, list) and len(limit) == 2 and all(
            v is None or _is_number(v) for v in limit)):
        return "header timelimit is not [soft, hard] seconds"
    if headers.get("ignore_result") is not None and not isinstance(headers["ignore_result"], bool):
        return "header ignore_result is not true or false"
    stamped = headers.get("stamped_headers")
    if stamped is not None and not (isinstance(stamped, list)
                                    and all(isinstance(h, str) for h in stamped)):
        return "header stamped_headers is not a list of names"
    if headers.get("stamps") is not None and not isinstance(headers["stamps"], dict):
        return "header stamps is not a mapping"
    linked = [k for k in _LINKS if headers.get(k)]
    if linked:
        return f"the message links other tasks ({', '.join(linked)})"
    return None


def payload_problem(payload: Any) -> str | None:
    """Why a decoded body is not ``[args, kwargs, options]`` (None: it is)."""
    if nested_over(payload, MAX_DEPTH):
        return f"the body nests more than {MAX_DEPTH} deep"
    if not (isinstance(payload, list) and len(payload) == 3 and isinstance(payload[0], list)
            and isinstance(payload[1], dict) and isinstance(payload[2], (dict, type(None)))):
        return "the body is not [args, kwargs, options]"
    options = payload[2] or {}
    linked = [k for k in options if options[k]]
    if linked:
        names = ", ".join(k if k in _LINKS else repr(k) for k in linked)
        return f"the message links other tasks ({names[:_SHOWN]})"
    return None


def body_problem(message: Any) -> str | None:
    """Why a kombu message is not an onsei task message celery can take (None: it is). Its
    body is decoded as celery would decode it (kombu's serializers); the result is kept on the
    message, so celery does not decode it again."""
    problem = headers_problem(message.headers)
    if problem is not None:
        return problem
    try:  # the content types celery accepts are set on the message (accept_content)
        payload = message.decode()
    except ContentDisallowed as e:
        return f"the body is not accepted: {_short(e)}"
    except Exception as e:  # noqa: BLE001 - kombu's DecodeError, RecursionError, MemoryError
        cause = e.__cause__ or e.__context__ or e
        if isinstance(cause, RecursionError):
            return "the body is not JSON: nested deeper than the parser can go"
        return f"the body is not JSON: {_short(e)}"
    return payload_problem(payload)
