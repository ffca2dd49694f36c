"""URL -> Store."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlparse

from common.storage.base import StorageError, Store

if TYPE_CHECKING:
    from common.settings import Settings


def split_url(url: str) -> tuple[str, str, str]:
    """``s3://bucket/a/b`` -> ("s3", "bucket", "a/b"); ``file:///x`` / ``x`` -> ("file", "",
    path)."""
    from common.redact import redact_url

    parsed = urlparse(url)
    if parsed.scheme == "s3":
        if "@" in parsed.netloc:  # boto3 would take it for the bucket and quote it in its error
            # The user part of an s3:// URL is an access key id: masked whole, not just the secret.
            masked = f"s3://***@{parsed.netloc.rpartition('@')[2]}{parsed.path}"
            raise StorageError(f"{masked}: an s3:// URL takes no user or password "
                               "(give the keys as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                               "or AWS_PROFILE)")
        return "s3", parsed.netloc, parsed.path.lstrip("/")
    if parsed.scheme == "file":
        return "file", "", parsed.path
    if parsed.scheme in ("", ) or len(parsed.scheme) == 1:  # plain path (or a Windows drive)
        return "file", "", url
    raise ValueError(f"unsupported storage URL scheme {parsed.scheme!r} in {redact_url(url)!r}")


def open_store(url: str, settings: Settings | None = None) -> Store:
    """``settings``: the S3 client's (an ``s3://`` URL needs them; a local path does not)."""
    scheme, bucket, path = split_url(url)
    if scheme == "s3":
        from common.storage.s3 import S3Store

        if settings is None:
            raise TypeError(f"{url}: an s3 store needs the settings (endpoint, timeouts)")
        return S3Store(bucket, path, settings=settings)
    from common.storage.local import LocalStore

    return LocalStore(path, url=url)
