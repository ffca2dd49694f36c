"""Local backend: plain paths and file:// URLs behave like the S3 store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.storage import NotFound, StorageError, open_store, split_url
from common.storage.local import LocalStore


@pytest.mark.parametrize("form", ["plain", "file"])
def test_round_trip(tmp_path: Path, form: str) -> None:
    root = tmp_path / "store"
    url = str(root) if form == "plain" else f"file://{root}"
    store = open_store(url)
    assert isinstance(store, LocalStore) and store.url == url
    store.write_bytes("a/b/c.json", b"{}")
    store.write_bytes("a/x.txt", b"hello")
    store.write_bytes("z", b"")
    assert (root / "a" / "b" / "c.json").read_bytes() == b"{}"
    assert store.read_bytes("a/x.txt") == b"hello"
    assert store.exists("a/x.txt") and not store.exists("a/nope")
    assert store.size("a/x.txt") == 5
    assert list(store.list()) == ["a/b/c.json", "a/x.txt", "z"]
    assert list(store.list("a/b")) == ["a/b/c.json"]
    assert list(store.list("a/x")) == ["a/x.txt"]
    assert list(store.list("missing/")) == []
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(100_000))
    store.put_file(src, "big/src.bin")
    dest = store.get_file("big/src.bin", tmp_path / "dl" / "copy.bin")
    assert dest.read_bytes() == src.read_bytes()
    store.delete("a/x.txt")
    store.delete("a/x.txt")  # absent: no error
    assert not store.exists("a/x.txt")
    with pytest.raises(NotFound, match="a/x.txt"):
        store.read_bytes("a/x.txt")
    with pytest.raises(NotFound):
        store.get_file("a/x.txt", tmp_path / "never")
    assert not (tmp_path / "never").exists()
    with pytest.raises(NotFound):
        store.size("a/x.txt")


def test_keys_cannot_escape_the_root(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "root"))
    with pytest.raises(StorageError, match="escapes"):
        store.write_bytes("../outside", b"x")
    assert not (tmp_path / "outside").exists()
    for key in ("/etc/passwd", "a/../../outside", ".."):
        with pytest.raises(StorageError, match="escapes"):
            store.read_bytes(key)
    store.write_bytes("a/../b", b"y")  # stays inside: the same object as "b"
    assert store.read_bytes("b") == b"y"


def test_a_directory_symlinked_to_another_disk_is_part_of_the_store(tmp_path: Path) -> None:
    """Keys are checked lexically, like S3 keys: a ledger moved to another disk and linked
    back is read and written through the link."""
    other = tmp_path / "other-disk"
    other.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "_ledger").symlink_to(other, target_is_directory=True)
    store = open_store(str(root))
    store.write_bytes("_ledger/asr/shard-000001.json", b"{}")
    assert (other / "asr" / "shard-000001.json").read_bytes() == b"{}"
    assert list(store.list("_ledger/")) == ["_ledger/asr/shard-000001.json"]


def test_failed_write_leaves_old_object_and_no_temp(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(str(tmp_path))
    store.write_bytes("k", b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        store.write_bytes("k", b"new")
    monkeypatch.undo()
    assert store.read_bytes("k") == b"old"
    assert sorted(os.listdir(tmp_path)) == ["k"]  # the temp file was removed


def test_split_url() -> None:
    assert split_url("s3://bucket/a/b") == ("s3", "bucket", "a/b")
    assert split_url("file:///abs/dir") == ("file", "", "/abs/dir")
    assert split_url("rel/dir") == ("file", "", "rel/dir")
    with pytest.raises(ValueError, match="unsupported"):
        open_store("ftp://host/x")
