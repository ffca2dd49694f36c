"""A local copy as a cache (common/storage/cached.py): read when it reads, fetched again from the
store when it does not, and a store's copy that does not read is an error naming its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.storage import open_store
from common.storage.cached import read_cached


class Unreadable(RuntimeError):
    pass


def _number(path: Path) -> int:
    return int(path.read_text())


def test_a_damaged_local_copy_is_fetched_again(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "root"))
    store.write_bytes("parts/p1", b"41")
    cache = tmp_path / "cache"
    cache.mkdir()
    assert read_cached(store, "parts/p1", cache, _number, Unreadable) == 41
    (cache / "p1").write_text("garbage")  # a damaged cache
    assert read_cached(store, "parts/p1", cache, _number, Unreadable) == 41
    assert (cache / "p1").read_text() == "41"
    store.write_bytes("parts/p1", b"42")  # a readable local copy is what is read
    assert read_cached(store, "parts/p1", cache, _number, Unreadable) == 41


def test_a_store_copy_that_does_not_read_names_the_key(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "root"))
    store.write_bytes("parts/p2", b"not a number")
    with pytest.raises(Unreadable, match=r"^parts/p2 cannot be read: ValueError"):
        read_cached(store, "parts/p2", tmp_path, _number, Unreadable)
