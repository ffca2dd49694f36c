"""Which errors are worth retrying soon: network blips, throttling, 5xx, timeouts."""

from __future__ import annotations

import socket

TRANSIENT_S3_CODES = frozenset(
    {"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout", "Throttling",
     "ThrottlingException", "RequestTimeTooSkewed", "500", "502", "503", "504"}
)


def is_transient(exc: BaseException) -> bool:
    try:
        import botocore.exceptions as bex
    except ImportError:  # pragma: no cover
        bex = None
    if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout)):
        return True
    if bex is not None:
        if isinstance(exc, (bex.EndpointConnectionError, bex.ConnectionClosedError,
                            bex.ReadTimeoutError, bex.ConnectTimeoutError,
                            bex.ResponseStreamingError)):
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
