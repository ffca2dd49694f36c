"""ReadOnce: each object read at most once per pass, absent stays absent, writes refused."""

from __future__ import annotations

import pytest

from common.storage import NotFound, StorageError
from common.storage.local import LocalStore
from common.storage.snapshot import ReadOnce


class Counting(LocalStore):
    reads = 0

    def read_bytes(self, key: str) -> bytes:
        self.reads += 1
        return super().read_bytes(key)


def test_reads_each_object_once_and_keeps_the_first_version(tmp_path):
    inner = Counting(str(tmp_path))
    inner.write_bytes("a.json", b"1")
    view = ReadOnce(inner)
    assert view.read_bytes("a.json") == b"1"
    inner.write_bytes("a.json", b"2")
    assert view.read_bytes("a.json") == b"1"  # one version for the whole pass
    assert inner.reads == 1
    assert ReadOnce(inner).read_bytes("a.json") == b"2"


def test_absent_is_absent_for_the_pass_and_writes_are_refused(tmp_path):
    inner = Counting(str(tmp_path))
    view = ReadOnce(inner)
    for _ in range(2):
        with pytest.raises(NotFound):
            view.read_bytes("missing")
    assert inner.reads == 1
    with pytest.raises(StorageError, match="read-only"):
        view.write_bytes("x", b"")
    with pytest.raises(StorageError, match="read-only"):
        view.delete("x")
    assert not inner.exists("x")
