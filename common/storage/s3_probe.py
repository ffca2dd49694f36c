"""The first request to an S3 endpoint, answered within seconds or a clear error.

An endpoint that accepts connections and never answers would otherwise cost every attempt its
full read timeout (8 x 60 s by default: 8 minutes) before a command said anything. Each process
asks once per store, before its first real request: ``HEAD`` of the bucket with the connect
timeout as the read timeout too, two tries. Any HTTP answer (403, 404, 500 included) and any
sign of life (a reset) count as an answer: the real request then says what is wrong. Only
silence (a timeout) or no connection at all (refused, unknown host) fail here, naming the
endpoint. After this, requests get their normal timeouts and retries.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from common.redact import redact_text
from common.storage.base import StorageError

if TYPE_CHECKING:
    from common.settings import Settings

ATTEMPTS = 2


def s3_endpoint(settings: Settings) -> str | None:
    """The endpoint S3 calls go to: the setting, else ``AWS_ENDPOINT_URL`` (boto's own), else
    None (AWS)."""
    return settings.s3_endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None


class EndpointSilent(StorageError):
    """The S3 endpoint did not answer the first request at all."""


def probe_endpoint(settings: Settings, bucket: str, endpoint: str | None) -> None:
    import boto3
    import botocore.exceptions as bex
    from botocore.config import Config

    timeout = settings.s3_connect_timeout
    cfg = Config(retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
                 connect_timeout=timeout, read_timeout=timeout)
    client = boto3.session.Session().client("s3", endpoint_url=endpoint, config=cfg)
    t0 = time.monotonic()
    try:
        client.head_bucket(Bucket=bucket)
    except (bex.ConnectTimeoutError, bex.ReadTimeoutError, bex.EndpointConnectionError) as e:
        where = redact_text(endpoint) if endpoint else "AWS S3 (no endpoint set)"
        raise EndpointSilent(
            f"S3 endpoint {where} did not answer (bucket {bucket!r}, {ATTEMPTS} tries in "
            f"{time.monotonic() - t0:.0f} s, ONSEI_S3_CONNECT_TIMEOUT={timeout:g}): "
            f"{type(e).__name__}; check ONSEI_S3_ENDPOINT_URL / AWS_ENDPOINT_URL and the network",
            transient=True) from e
    except Exception:  # noqa: BLE001 - it answered (or no credentials): the real request reports
        return
