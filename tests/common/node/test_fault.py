"""Which failures are the node's, not the shard's (common/node/fault.py)."""

from __future__ import annotations

import errno

import pytest

from common.errors import ModelUnavailable
from common.node.fault import NodeFault, node_fault


def _wrapped(inner: BaseException) -> RuntimeError:
    try:
        try:
            raise inner
        except BaseException as e:
            raise RuntimeError("GET s3://b/raw/shard-000001.tar failed") from e
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize("exc,words", [
    (OSError(errno.ENOSPC, "No space left on device", "/scratch/x"), "disk full (/scratch/x)"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "disk full: Disk quota exceeded"),
    (_wrapped(OSError(errno.ENOSPC, "No space left on device")), "disk full"),
    (RuntimeError("body broke off: [Errno 28] No space left on device"), "disk full"),
    (ModelUnavailable("weights not found offline"), "ModelUnavailable: weights not found"),
    (NodeFault("model load failed: CUDA error"), "model load failed: CUDA error"),
])
def test_the_nodes_fault(exc, words) -> None:
    assert words in (node_fault(exc) or "")


@pytest.mark.parametrize("exc", [
    ValueError("corrupt shard"), OSError(errno.ENOENT, "No such file"),
    _wrapped(KeyError("key")), RuntimeError("dummy failure for shard 1"),
])
def test_the_shards_fault(exc) -> None:
    assert node_fault(exc) is None
