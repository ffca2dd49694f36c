"""Where a storage URL really is, as one string, whatever the working directory."""

from __future__ import annotations

import os
from pathlib import Path

from common.storage.factory import split_url


def location(url: str, s3_endpoint: str | None = None) -> str:
    """A local path made absolute with its symlinks resolved (``raw`` given in A and in B are
    two places), an S3 URL with the endpoint it is read from (one bucket name on two endpoints:
    two places). Keys the scratch space of a run (common.stages.prefetch)."""
    scheme, bucket, path = split_url(url)
    if scheme == "s3":
        return f"s3://{bucket}/{path.strip('/')} @ {s3_endpoint or 'aws'}"
    return "file://" + str(Path(path).expanduser().resolve())


def absolute_url(url: str) -> str:
    """``s3://`` unchanged; a local path or ``file://`` URL as an absolute ``file://`` URL
    (symlinks kept: the place as the caller named it, from any working directory)."""
    scheme, _bucket, path = split_url(url)
    if scheme == "s3":
        return url
    return "file://" + os.path.abspath(Path(path).expanduser())
