"""The storage contract every backend implements."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from pathlib import Path


class StorageError(RuntimeError):
    """A storage operation failed for good (after retries where retrying made sense).

    ``transient`` is true when the cause was a network blip, throttling or a 5xx that outlasted
    our retries: a caller (the task queue) may try again later.
    """

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class NotFound(StorageError, FileNotFoundError):
    """The object does not exist."""


class Store(abc.ABC):
    """A root location; keys are relative, ``/``-separated."""

    url: str
    # Small reads worth overlapping in threads (many done records): a remote store's GETs are
    # latency-bound; a local disk's are not, and threads only add their start-up cost there.
    parallel_reads: int = 1

    @abc.abstractmethod
    def get_file(self, key: str, dest: Path) -> Path:
        """Download ``key`` to ``dest`` (whole or not at all; resumes a partial ``dest.part``)."""

    @abc.abstractmethod
    def put_file(self, src: Path, key: str) -> None:
        """Upload ``src`` as ``key``; readers see the old object or the new one, never a part."""

    @abc.abstractmethod
    def exists(self, key: str) -> bool: ...

    @abc.abstractmethod
    def size(self, key: str) -> int: ...

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys under ``prefix`` (relative to the root), paginated, in lexical order."""

    def list_tagged(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        """``(key, tag)`` under ``prefix``, the tag changing whenever the object is rewritten
        (S3: its ETag; local: inode, mtime and size). "" when the backend cannot tell: a cache of
        the object must then read it again."""
        return ((k, "") for k in self.list(prefix))

    @abc.abstractmethod
    def read_bytes(self, key: str) -> bytes: ...

    @abc.abstractmethod
    def write_bytes(self, key: str, data: bytes) -> None:
        """Atomic small write."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; no error when it is absent."""

    def identity(self, key: str) -> str:
        """``"<size>:<version>"``: changes whenever the object does (ETag on S3, mtime on disk).
        A local copy is reused only while its source's identity is unchanged
        (common.stages.prefetch).
        """
        return f"{self.size(key)}:"

    def child_url(self, key: str) -> str:
        return f"{self.url.rstrip('/')}/{key}"

    def __repr__(self) -> str:  # never shows credentials: urls hold none
        return f"{type(self).__name__}({self.url!r})"
