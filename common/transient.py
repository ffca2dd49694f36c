"""Which errors are worth retrying soon: network blips, throttling, 5xx, timeouts."""

from __future__ import annotations

import http.client
import random
import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

TRANSIENT_S3_CODES = frozenset(
    {"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout", "Throttling",
     "ThrottlingException", "RequestTimeTooSkewed", "500", "502", "503", "504"}
)


def is_transient(exc: BaseException) -> bool:
    try:
        import botocore.exceptions as bex
    except ImportError:  # pragma: no cover
        bex = None
    if getattr(exc, "transient", False):  # e.g. a StorageError that gave up on a transient cause
        return True
    if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout, http.client.IncompleteRead)):
        return True
    if bex is not None:
        if isinstance(exc, (bex.EndpointConnectionError, bex.ConnectionClosedError,
                            bex.ReadTimeoutError, bex.ConnectTimeoutError,
                            bex.ResponseStreamingError, bex.IncompleteReadError,
                            bex.HTTPClientError)):
            return True
        if isinstance(exc, bex.ClientError):
            err = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            return err.get("Code") in TRANSIENT_S3_CODES or status >= 500 or status == 429
    try:
        import redis.exceptions as rex

        if isinstance(exc, (rex.ConnectionError, rex.TimeoutError)):
            return True
    except ImportError:  # pragma: no cover
        pass
    return False


def retry_transient(fn: Callable[[], T], attempts: int, base: float = 0.2, cap: float = 10.0,
                    sleep: Callable[[float], None] = time.sleep,
                    retry_on: Callable[[BaseException], bool] = is_transient) -> T:
    """Call ``fn``; on an error ``retry_on`` accepts (default: transient) retry, up to
    ``attempts`` tries in all, with exponential back-off and full jitter (spreads a fleet's
    retries). Other errors raise at once."""
    for attempt in range(max(1, attempts)):
        try:
            return fn()
        except Exception as e:
            if attempt + 1 >= attempts or not retry_on(e):
                raise
            sleep(random.uniform(0, min(cap, base * 2**attempt)))
    raise AssertionError("unreachable")  # pragma: no cover
