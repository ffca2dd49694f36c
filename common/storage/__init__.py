"""One URL-addressed interface over local paths, ``file://`` and ``s3://``.

``open_store(url)`` returns a :class:`Store` rooted at that URL; keys are ``/``-separated
paths relative to the root. Every write is whole-or-nothing: a reader never sees a partial
object (local: temp name + rename; S3: a single PUT or a completed multipart upload).
"""

from __future__ import annotations

from common.storage.base import NotFound, StorageError, Store
from common.storage.factory import open_store, split_url

__all__ = ["NotFound", "StorageError", "Store", "open_store", "split_url"]
