"""S3 backend against moto's server over HTTP, with a fault-injecting proxy in between."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import boto3
import pytest

from common.storage import NotFound, StorageError, open_store
from common.storage.s3 import S3Store
from common.transient import is_transient
from tests.faultproxy import FaultProxy

MiB = 1024 * 1024


@pytest.fixture
def blob(tmp_path: Path):
    def _make(size: int, name: str = "src.bin") -> Path:
        p = tmp_path / name
        p.write_bytes(os.urandom(size))
        return p

    return _make


def test_round_trip_small_objects(s3_bucket: str, make_settings) -> None:
    store = open_store(f"s3://{s3_bucket}/root/dir", make_settings())
    assert isinstance(store, S3Store)
    store.write_bytes("a/x.json", b'{"a": 1}')
    store.write_bytes("b.txt", b"hello")
    assert store.read_bytes("a/x.json") == b'{"a": 1}'
    assert store.exists("b.txt") and not store.exists("nope")
    assert store.size("b.txt") == 5
    assert list(store.list()) == ["a/x.json", "b.txt"]  # relative to the store's prefix
    assert list(store.list("a/")) == ["a/x.json"]
    store.delete("b.txt")
    store.delete("b.txt")  # absent: no error
    assert not store.exists("b.txt")
    with pytest.raises(NotFound, match=f"s3://{s3_bucket}/root/dir/b.txt"):
        store.read_bytes("b.txt")
    with pytest.raises(NotFound):
        store.size("b.txt")
    # the objects really sit under the prefix in the bucket
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert keys == ["root/dir/a/x.json"]


def test_identity_changes_with_the_object(s3_bucket: str, make_settings) -> None:
    """Size + ETag: what a prefetched copy is checked against before reuse."""
    store = open_store(f"s3://{s3_bucket}/ident", make_settings())
    store.write_bytes("k", b"one")
    first = store.identity("k")
    assert first.startswith("3:") and first == store.identity("k")
    store.write_bytes("k", b"two")  # same size, new content
    assert store.identity("k") != first
    with pytest.raises(NotFound):
        store.identity("missing")


def test_bucket_root_store_and_empty_object(s3_bucket: str, make_settings, tmp_path: Path) -> None:
    store = open_store(f"s3://{s3_bucket}", make_settings())
    store.write_bytes("empty", b"")
    dest = store.get_file("empty", tmp_path / "out" / "empty")
    assert dest.read_bytes() == b""
    assert list(store.list()) == ["empty"]


def test_multipart_upload_and_parallel_download(s3_bucket: str, s3_proxy, make_settings,
                                                blob, tmp_path: Path) -> None:
    src = blob(12 * MiB + 12345)
    settings = make_settings(s3_part_size_mb=5, s3_concurrency=4, s3_endpoint_url=s3_proxy.url)
    store = open_store(f"s3://{s3_bucket}/mp", settings)
    store.put_file(src, "big.bin")
    # create + complete (POST) and three 5 MiB part PUTs: a multipart upload
    assert s3_proxy.counts["POST"] == 2 and s3_proxy.counts["PUT"] == 3
    assert store.head("big.bin")["ETag"].endswith('-3"')
    s3_proxy.reset_counts()
    dest = store.get_file("big.bin", tmp_path / "dl" / "big.bin")
    assert dest.read_bytes() == src.read_bytes()
    assert s3_proxy.counts["GET"] == 3  # three ranged GETs
    assert not (tmp_path / "dl" / "big.bin.part").exists()
    assert not (tmp_path / "dl" / "big.bin.part.json").exists()


def test_failed_multipart_upload_leaves_nothing(s3_bucket: str, s3_proxy, make_settings,
                                                blob) -> None:
    src = blob(11 * MiB)
    store = open_store(f"s3://{s3_bucket}", make_settings(
        s3_part_size_mb=5, s3_concurrency=1, s3_endpoint_url=s3_proxy.url))
    store.write_bytes("big.bin", b"old")
    s3_proxy.set_fault("status", status=403, methods={"PUT"}, skip=1, count=1)
    with pytest.raises(StorageError, match="AccessDenied"):
        store.put_file(src, "big.bin")
    assert store.read_bytes("big.bin") == b"old"  # readers still see the old object whole
    uploads = boto3.client("s3").list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])
    assert uploads == []  # the multipart upload was aborted


def _sidecar(dest: Path) -> dict:
    return json.loads(dest.with_name(dest.name + ".part.json").read_text())


def test_interrupted_download_resumes_missing_parts_only(s3_bucket: str, s3_proxy,
                                                         make_settings, blob,
                                                         tmp_path: Path) -> None:
    src = blob(6 * MiB)
    boto3.client("s3").upload_file(str(src), s3_bucket, "r/obj.bin")
    kw = {"s3_part_size_mb": 1, "s3_concurrency": 1, "s3_max_attempts": 1,
          "s3_endpoint_url": s3_proxy.url}
    dest = tmp_path / "dl" / "obj.bin"
    # two ranged GETs succeed, then every connection drops mid-body: no retries left
    s3_proxy.set_fault("drop", methods={"GET"}, skip=2)
    with pytest.raises(StorageError) as ei:
        open_store(f"s3://{s3_bucket}/r", make_settings(**kw)).get_file("obj.bin", dest)
    assert ei.value.transient and "s3://" in str(ei.value)
    assert not dest.exists()
    assert _sidecar(dest)["done"] == [0, 1]

    s3_proxy.clear()
    s3_proxy.reset_counts()
    fresh = open_store(f"s3://{s3_bucket}/r", make_settings(**kw))  # as a new process would
    fresh.get_file("obj.bin", dest)
    assert dest.read_bytes() == src.read_bytes()
    assert s3_proxy.counts["GET"] == 4  # parts 2..5 only
    assert not dest.with_name("obj.bin.part.json").exists()


def test_resume_restarts_when_object_changed(s3_bucket: str, s3_proxy, make_settings, blob,
                                             tmp_path: Path) -> None:
    s3 = boto3.client("s3")
    s3.put_object(Bucket=s3_bucket, Key="obj", Body=os.urandom(3 * MiB))
    kw = {"s3_part_size_mb": 1, "s3_concurrency": 1, "s3_max_attempts": 1,
          "s3_endpoint_url": s3_proxy.url}
    dest = tmp_path / "obj"
    s3_proxy.set_fault("reset", methods={"GET"}, skip=1)
    with pytest.raises(StorageError):
        open_store(f"s3://{s3_bucket}", make_settings(**kw)).get_file("obj", dest)
    assert _sidecar(dest)["done"] == [0]
    new = os.urandom(3 * MiB)
    s3.put_object(Bucket=s3_bucket, Key="obj", Body=new)  # replaced meanwhile
    s3_proxy.clear()
    s3_proxy.reset_counts()
    open_store(f"s3://{s3_bucket}", make_settings(**kw)).get_file("obj", dest)
    assert dest.read_bytes() == new
    assert s3_proxy.counts["GET"] == 3  # all parts again, none kept from the old object


def test_listing_more_than_1000_keys(inproc_s3, make_settings) -> None:
    bucket = inproc_s3.create_bucket("many-keys")
    keys = [f"k/{i:05d}" for i in range(1234)]
    inproc_s3.put_keys(bucket, (f"many/{k}" for k in keys))  # seeded without 1234 PUTs
    inproc_s3.put_keys(bucket, ["many/other", "elsewhere"])
    with FaultProxy(inproc_s3.url) as proxy:
        store = open_store(f"s3://{bucket}/many", make_settings(s3_endpoint_url=proxy.url))
        assert list(store.list("k/")) == keys  # relative to the store's prefix, in order
        assert proxy.requests("GET", "list-type=2") == 2  # two pages, nothing per key
        assert sum(proxy.counts.values()) == 2 + 1  # + the endpoint probe (HEAD, per process)
        assert len(list(store.list())) == 1235


def test_retries_injected_500s(s3_bucket: str, s3_proxy, make_settings, blob,
                               tmp_path: Path) -> None:
    store = open_store(f"s3://{s3_bucket}", make_settings(s3_endpoint_url=s3_proxy.url))
    assert not store.exists("k")  # the endpoint probe is made: the faults meet the PUTs
    s3_proxy.reset_counts()
    s3_proxy.set_fault("status", status=500, count=2)
    store.write_bytes("k", b"v")
    assert s3_proxy.counts["PUT"] == 3 and s3_proxy.injected["status"] == 2
    s3_proxy.reset_counts()
    s3_proxy.set_fault("status", status=503, count=1)  # SlowDown
    assert store.read_bytes("k") == b"v"
    assert s3_proxy.counts["GET"] == 2
    # bodies that break off mid-stream are fetched again
    src = blob(3 * MiB)
    store.put_file(src, "f.bin")
    s3_proxy.reset_counts()
    s3_proxy.set_fault("drop", methods={"GET"}, count=2, drop_after=1000)
    store.get_file("f.bin", tmp_path / "f.bin")
    assert (tmp_path / "f.bin").read_bytes() == src.read_bytes()
    assert s3_proxy.injected["drop"] == 2 and s3_proxy.counts["GET"] == 3


def test_read_timeout_is_retried(s3_bucket: str, s3_proxy, make_settings) -> None:
    store = open_store(f"s3://{s3_bucket}", make_settings(
        s3_endpoint_url=s3_proxy.url, s3_read_timeout=0.3))
    store.write_bytes("k", b"v")
    s3_proxy.set_fault("delay", delay=1.0, count=1, methods={"GET"})
    assert store.read_bytes("k") == b"v"
    assert s3_proxy.counts["GET"] == 2


def test_a_full_local_disk_is_not_fetched_again(s3_bucket: str, s3_proxy, make_settings,
                                                blob, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing a downloaded part fails (ENOSPC): the error is the node's, raised at once; a
    broken body is retried, a full disk would only be refilled."""
    import errno

    src = blob(2 * MiB)
    boto3.client("s3").upload_file(str(src), s3_bucket, "d/obj.bin")
    store = open_store(f"s3://{s3_bucket}/d", make_settings(
        s3_endpoint_url=s3_proxy.url, s3_max_attempts=4, s3_part_size_mb=8, s3_concurrency=1))

    def full(fd: int, data: bytes, pos: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(OSError) as ei:
        store.get_file("obj.bin", tmp_path / "dl" / "obj.bin")
    assert ei.value.errno == errno.ENOSPC and not is_transient(ei.value)
    assert s3_proxy.counts["GET"] == 1


def test_transient_errors_give_up_after_bounded_attempts(s3_bucket: str, s3_proxy,
                                                         make_settings) -> None:
    store = open_store(f"s3://{s3_bucket}", make_settings(
        s3_endpoint_url=s3_proxy.url, s3_max_attempts=2))
    s3_proxy.set_fault("status", status=503)
    with pytest.raises(StorageError) as ei:
        store.write_bytes("k", b"v")
    assert s3_proxy.counts["PUT"] == 2
    assert ei.value.transient and is_transient(ei.value)  # the queue may try again later


def test_non_transient_errors_raise_at_once(s3_endpoint: str, s3_bucket: str, s3_proxy,
                                            make_settings) -> None:
    settings = make_settings(s3_endpoint_url=s3_proxy.url)
    missing = open_store("s3://no-such-bucket-here/p", settings)
    with pytest.raises(StorageError, match=r"s3://no-such-bucket-here/p/k: bucket .* not exist"):
        missing.write_bytes("k", b"v")
    assert s3_proxy.counts["PUT"] == 1  # not retried
    s3_proxy.reset_counts()
    store = open_store(f"s3://{s3_bucket}", settings)
    s3_proxy.set_fault("status", status=403)
    with pytest.raises(StorageError) as ei:
        store.read_bytes("k")
    msg = str(ei.value)
    assert f"s3://{s3_bucket}/k" in msg and "AccessDenied" in msg and not ei.value.transient
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in msg
    assert s3_proxy.counts["GET"] == 1


def _child_write(store: S3Store) -> None:
    inherited = store._client_obj
    fresh = store._client() is not inherited  # a forked child must not reuse parent sockets
    store.write_bytes("from-child", f"{os.getpid()} {fresh}".encode())


def test_client_is_rebuilt_after_fork(s3_bucket: str, make_settings) -> None:
    store = open_store(f"s3://{s3_bucket}", make_settings())
    store.write_bytes("warm", b"")  # the parent now holds a client and its sockets
    parent_client = store._client()
    proc = multiprocessing.get_context("fork").Process(target=_child_write, args=(store,))
    proc.start()
    proc.join(30)
    assert proc.exitcode == 0
    assert store.read_bytes("from-child").decode() == f"{proc.pid} True"
    assert store._client() is parent_client


def test_open_store_s3_url(make_settings) -> None:
    store = open_store("s3://bucket/a/b/", make_settings())
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix, store.url) == ("bucket", "a/b", "s3://bucket/a/b")
    assert store.child_url("x/y") == "s3://bucket/a/b/x/y"
    with pytest.raises(ValueError, match="bucket"):
        open_store("s3:///nobucket", make_settings())
