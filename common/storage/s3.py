"""S3 backend (boto3): any S3-compatible endpoint (AWS, MinIO, R2, GCS interop, moto).

Endpoint: ``settings.s3_endpoint_url``, else ``AWS_ENDPOINT_URL``, else AWS. Region and
credentials come from the usual AWS chain (env, profile, instance role). Transient errors are
retried by botocore's "standard" mode per request (5xx, throttling, resets, timeouts) and, for
response bodies that break mid-stream, by our own bounded back-off loop around each read.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from common.storage.base import NotFound, StorageError, Store
from common.storage.s3_body import BodyBroken, MiB, ObjectChanged, read_body, transfer_part_size
from common.storage.s3_download import download
from common.transient import is_transient, retry_transient

if TYPE_CHECKING:
    from common.settings import Settings

T = TypeVar("T")
_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}


class S3Store(Store):
    parallel_reads = 16
    def __init__(self, bucket: str, prefix: str, settings: Settings) -> None:
        if not bucket:
            raise ValueError("an s3:// URL needs a bucket: s3://bucket/prefix")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.root = f"{self.prefix}/" if self.prefix else ""
        self.settings = settings
        self.url = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._lock = threading.Lock()
        self._client_obj: Any = None
        self._pid = -1

    # --- client (lazy, one per process: a forked worker must not share sockets) ------------
    def _client(self) -> Any:
        pid = os.getpid()
        if self._client_obj is None or self._pid != pid:
            with self._lock:
                if self._client_obj is None or self._pid != pid:
                    from common.storage.s3_probe import probe_endpoint, s3_endpoint

                    client = self._make_client()
                    # silence fails in seconds, not after every attempt's read timeout
                    probe_endpoint(self.settings, self.bucket, s3_endpoint(self.settings))
                    self._client_obj, self._pid = client, pid
        return self._client_obj

    def _make_client(self) -> Any:
        import boto3
        from botocore.config import Config

        s = self.settings
        cfg = Config(
            retries={"mode": "standard", "total_max_attempts": max(1, s.s3_max_attempts)},
            connect_timeout=s.s3_connect_timeout,
            read_timeout=s.s3_read_timeout,
            max_pool_connections=max(10, 2 * s.s3_concurrency),
        )
        from common.storage.s3_probe import s3_endpoint

        return boto3.session.Session().client("s3", endpoint_url=s3_endpoint(s), config=cfg)

    def __getstate__(self) -> dict[str, Any]:  # picklable: the client is rebuilt on use
        state = dict(self.__dict__)
        state.update(_client_obj=None, _pid=-1, _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # --- helpers --------------------------------------------------------------------------
    def _key(self, key: str) -> str:
        return self.root + key.lstrip("/")

    def _error(self, exc: BaseException, op: str, key: str) -> StorageError:
        """A clear error naming the operation and URL; never credentials."""
        url = self.child_url(key) if key else self.url
        resp = getattr(exc, "response", None) or {}
        code = str(resp.get("Error", {}).get("Code", ""))
        status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _NOT_FOUND:
            return NotFound(f"not found: {url}")
        if code == "NoSuchBucket":
            return StorageError(f"{op} {url}: bucket {self.bucket!r} does not exist")
        if type(exc).__name__ in ("NoCredentialsError", "PartialCredentialsError"):
            return StorageError(f"{op} {url}: no AWS credentials found (env, profile or role)")
        detail = f"{code} (HTTP {status})" if code else f"{type(exc).__name__}: {exc}"
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            detail += ": check the credentials and the bucket policy"
        return StorageError(f"{op} {url} failed: {detail}", transient=is_transient(exc))

    def _call(self, op: str, key: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except StorageError:
            raise
        except Exception as e:
            if not _is_boto_error(e):
                raise
            raise self._error(e, op, key) from e

    def _reads(self, op: str, key: str, fn: Callable[[], T]) -> T:
        """A request whose body we stream: botocore retries the request itself; a body that
        breaks off after the response began (``BodyBroken``) is retried here."""
        return self._call(op, key, lambda: retry_transient(
            fn, self.settings.s3_max_attempts, retry_on=lambda e: isinstance(e, BodyBroken)))

    def head(self, key: str) -> dict[str, Any]:
        return self._call("HEAD", key, lambda: self._client().head_object(
            Bucket=self.bucket, Key=self._key(key)))

    # --- Store contract -------------------------------------------------------------------
    def exists(self, key: str) -> bool:
        try:
            self.head(key)
            return True
        except NotFound:
            return False

    def size(self, key: str) -> int:
        return int(self.head(key)["ContentLength"])

    def identity(self, key: str) -> str:
        head = self.head(key)
        return f"{int(head['ContentLength'])}:{head.get('ETag', '')}"

    def list(self, prefix: str = "") -> Iterator[str]:
        return (obj["Key"][len(self.root):] for obj in self._objects(prefix))

    def list_tagged(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        return ((obj["Key"][len(self.root):], str(obj.get("ETag", "")))
                for obj in self._objects(prefix))

    def _objects(self, prefix: str) -> Iterator[dict[str, Any]]:
        full = self._key(prefix) if prefix else self.root

        def pages() -> Iterator[dict[str, Any]]:
            paginator = self._client().get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
                yield from page.get("Contents", ())

        it = pages()
        while True:  # map errors raised while paging, page by page
            try:
                obj = self._call("LIST", prefix, lambda: next(it))
            except StopIteration:
                return
            yield obj

    def read_bytes(self, key: str) -> bytes:
        def fetch() -> bytes:
            resp = self._client().get_object(Bucket=self.bucket, Key=self._key(key))
            return read_body(resp["Body"], expected=resp.get("ContentLength"))

        return self._reads("GET", key, fetch)

    def write_bytes(self, key: str, data: bytes) -> None:
        # One PUT is atomic: readers see the old object or the new one.
        self._call("PUT", key, lambda: self._client().put_object(
            Bucket=self.bucket, Key=self._key(key), Body=data))

    def delete(self, key: str) -> None:
        try:
            self._call("DELETE", key, lambda: self._client().delete_object(
                Bucket=self.bucket, Key=self._key(key)))
        except NotFound:
            pass

    def put_file(self, src: Path, key: str) -> None:
        """Single PUT or multipart upload (completed last, aborted on failure): all or nothing."""
        from boto3.s3.transfer import TransferConfig, create_transfer_manager

        s = self.settings
        size = Path(src).stat().st_size
        part = transfer_part_size(size, s.s3_part_size_mb * MiB, s.s3_concurrency)
        cfg = TransferConfig(multipart_threshold=part, multipart_chunksize=part,
                             max_concurrency=s.s3_concurrency, use_threads=True,
                             preferred_transfer_client="classic")

        def upload() -> None:
            with create_transfer_manager(self._client(), cfg) as tm:
                tm.upload(str(src), self.bucket, self._key(key)).result()

        self._call("PUT", key, upload)

    def get_file(self, key: str, dest: Path) -> Path:
        return download(self, key, Path(dest))

    def read_range(self, key: str, start: int, end: int, etag: str,
                   write: Callable[[int, bytes], object]) -> None:
        """Bytes ``start`` to ``end`` (inclusive) of the object as it was at ``etag``, each chunk
        handed to ``write(offset, chunk)``; a broken body is fetched again from ``start``.
        ``ObjectChanged`` when the object was replaced meanwhile."""
        def fetch() -> None:
            try:
                resp = self._client().get_object(Bucket=self.bucket, Key=self._key(key),
                                                 Range=f"bytes={start}-{end}", IfMatch=etag)
            except Exception as e:
                if _status(e) == 412:
                    raise ObjectChanged() from e
                raise
            pos = start

            def sink(chunk: bytes) -> None:
                nonlocal pos
                write(pos, chunk)
                pos += len(chunk)

            read_body(resp["Body"], sink, expected=end - start + 1)

        self._reads("GET", key, fetch)


def _is_boto_error(exc: BaseException) -> bool:
    mod = type(exc).__module__
    return mod.startswith(("botocore", "boto3", "s3transfer", "urllib3")) or is_transient(exc)


def _status(exc: BaseException) -> Any:
    resp = getattr(exc, "response", None) or {}
    return resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
