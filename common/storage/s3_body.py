"""Reading S3 response bodies and sizing transfer parts: what uploads (common/storage/s3.py)
and resumable downloads (common/storage/s3_download.py) share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

MiB = 1024 * 1024


class ObjectChanged(Exception):
    """The object was replaced while we were fetching it (HTTP 412 on If-Match)."""


def transfer_part_size(size: int, part_size: int, concurrency: int) -> int:
    """Part size for one transfer: the configured size, but smaller parts (never below
    min(part_size, 8 MiB)) when the object is too small to keep every thread busy."""
    floor = min(part_size, 8 * MiB)
    return max(floor, min(part_size, math.ceil(size / max(1, concurrency))))


class BodyBroken(ConnectionError):
    """A response body broke off mid-stream (reset, timeout, short read): worth a retry."""


def read_body(body: Any, sink: Callable[[bytes], None] | None = None,
              expected: int | None = None) -> bytes:
    """Drain a botocore StreamingBody (into ``sink`` chunk by chunk when given), turning any
    failure while reading into ``BodyBroken``. A failure of ``sink`` (a full local disk) is
    raised as it is: fetching the body again would not cure it."""
    out, n = bytearray(), 0
    while True:
        try:
            chunk = body.read(MiB)
        except Exception as e:
            raise BodyBroken(f"response body broke off after {n} bytes: {e}") from e
        if not chunk:
            break
        n += len(chunk)
        if sink is None:
            out += chunk
        else:
            sink(chunk)
    if expected is not None and n != expected:
        raise BodyBroken(f"short body: {n} of {expected} bytes")
    return bytes(out)
