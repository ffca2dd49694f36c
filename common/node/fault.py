"""Failures that are the node's, not the shard's: a full disk, a model that cannot load.

Every shard a sick node takes would fail the same way: counting those failures against the
shards would dead-letter the whole queue (3 shards in ~90 s on a full scratch disk; a tokenize
worker without its model dead-lettered one every ~5 ms). So the engine says ``sick`` instead of
recording a failure, and the Celery worker hands the shard back and stops taking work
(common/queue/worker.py): the restart policy, Flower and the worker's log show it.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator

from common.errors import ModelUnavailable
from common.redact import redact_text

# ENOSPC: no space left; EDQUOT: quota exceeded. Both are the disk's state, not the data's.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class NodeFault(RuntimeError):
    """This node cannot do any shard's work (e.g. its model failed to load)."""


def _chain(exc: BaseException, depth: int = 8) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < depth:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]


def node_fault(exc: BaseException) -> str | None:
    """One line naming the node's fault behind ``exc`` (or anything it was raised from), or
    None when the failure may be the shard's."""
    for e in _chain(exc):
        if isinstance(e, NodeFault):  # its message says what failed
            return redact_text(str(e))
        if isinstance(e, ModelUnavailable):
            return redact_text(f"{type(e).__name__}: {e}")
        if isinstance(e, OSError) and e.errno in DISK_FULL:
            where = f" ({e.filename})" if e.filename else ""
            return redact_text(f"disk full{where}: {e.strerror or e}")
        if "[Errno 28]" in str(e):  # ENOSPC wrapped in a message (a storage client's error)
            return redact_text(f"disk full: {type(e).__name__}: {e}")
    return None
