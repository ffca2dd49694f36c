"""Shard reading and writing: round trip, bad members, unsafe names, broken shards."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from common.shards.tar import MemberError, Sample, ShardError, ShardWriter, iter_shard


def _add(tf: tarfile.TarFile, name: str, data: bytes = b"x", **attrs) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data) if attrs.get("type", tarfile.REGTYPE) == tarfile.REGTYPE else 0
    for k, v in attrs.items():
        setattr(info, k, v)
    tf.addfile(info, io.BytesIO(data) if info.size else None)


def _split(items):
    samples = [x for x in items if isinstance(x, Sample)]
    errors = [x for x in items if isinstance(x, MemberError)]
    return {s.key: s.files for s in samples}, errors


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.tar"
    src = tmp_path / "a.wav"
    src.write_bytes(b"RIFF" + bytes(range(256)) * 40)
    with ShardWriter(path) as w:
        w.write("a", {"flac": b"\x00" * 1000, "json": b'{"t": 1}'})
        w.write("dir/b", {"wav": b"wav-bytes"})
        w.write_files("c", {"wav": src, "json": b"{}"})
        w.write("日本語_キー", {"flac": b"jp"})
    assert w.count == 4
    assert not list(tmp_path.glob(".*.part")), "temp file left behind"
    got, errors = _split(list(iter_shard(path, max_member_bytes=1 << 20)))
    assert errors == []
    assert got == {
        "a": {"flac": b"\x00" * 1000, "json": b'{"t": 1}'},
        "dir/b": {"wav": b"wav-bytes"},
        "c": {"wav": src.read_bytes(), "json": b"{}"},
        "日本語_キー": {"flac": b"jp"},
    }


def test_writer_aborts_on_error_and_rejects_bad_keys(tmp_path: Path) -> None:
    path = tmp_path / "s.tar"
    with pytest.raises(RuntimeError), ShardWriter(path) as w:
        w.write("a", {"flac": b"1"})
        raise RuntimeError("boom")
    assert not path.exists() and not list(tmp_path.iterdir())
    with ShardWriter(tmp_path / "t.tar") as w:
        for bad in ("a.b", "../x", "/abs", ""):
            with pytest.raises(ValueError):
                w.write(bad, {"flac": b"1"})


def test_unsafe_members_reported_never_written(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "bad.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        _add(tf, "good1.flac", b"one")
        _add(tf, "../evil.flac", b"escape")
        _add(tf, "/etc/evil.flac", b"abs")
        _add(tf, "link.flac", type=tarfile.SYMTYPE, linkname="/etc/passwd")
        _add(tf, "hard.flac", type=tarfile.LNKTYPE, linkname="good1.flac")
        _add(tf, "dev.flac", type=tarfile.CHRTYPE, devmajor=1, devminor=3)
        _add(tf, "fifo.flac", type=tarfile.FIFOTYPE)
        _add(tf, "a/../../up.flac", b"up")
        _add(tf, "noext", b"?")
        _add(tf, "good2.flac", b"two")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    got, errors = _split(list(iter_shard(path)))
    assert got == {"good1": {"flac": b"one"}, "good2": {"flac": b"two"}}
    reasons = {e.name: e.reason for e in errors}
    assert reasons == {
        "../evil.flac": "unsafe_member:parent_traversal",
        "/etc/evil.flac": "unsafe_member:absolute_path",
        "link.flac": "unsafe_member:link",
        "hard.flac": "unsafe_member:link",
        "dev.flac": "unsafe_member:device",
        "fifo.flac": "unsafe_member:device",
        "a/../../up.flac": "unsafe_member:parent_traversal",
        "noext": "bad_name:no_key_or_extension",
    }
    assert all(e.key is None for e in errors)  # an unsafe name never becomes a key
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tar", "cwd"]


def test_non_utf8_name(tmp_path: Path) -> None:
    path = tmp_path / "s.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tf:
        _add(tf, "caf\udce9.flac", b"latin1 name")  # raw byte 0xE9: not UTF-8
        _add(tf, "ok.flac", b"fine")
    got, errors = _split(list(iter_shard(path)))
    assert got == {"ok": {"flac": b"fine"}}
    assert [(e.reason, e.name) for e in errors] == [
        ("unsafe_member:non_utf8_name", "caf\\xe9.flac")]


def test_size_limits_and_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "s.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        _add(tf, "big.flac", b"x" * 5000)
        _add(tf, "big.json", b"{}")
        _add(tf, "a.flac", b"a1")
        _add(tf, "a.flac", b"a2")  # same ext twice in one sample
        _add(tf, "b.flac", b"b")
        _add(tf, "a.json", b"late")  # key "a" again after "b"
        _add(tf, "c.json", b"{" + b" " * 300 + b"}")
    items = list(iter_shard(path, max_member_bytes=4096, max_sidecar_bytes=100))
    got, errors = _split(items)
    assert got == {"big": {"json": b"{}"}, "a": {"flac": b"a1"}, "b": {"flac": b"b"}}
    assert [(e.key, e.name, e.reason.split(":")[0]) for e in errors] == [
        ("big", "big.flac", "member_too_large"),
        ("a", "a.flac", "duplicate_member"),
        ("a", "a.json", "duplicate_key"),
        ("c", "c.json", "member_too_large"),
    ]
    assert errors[0].reason == "member_too_large:5000>4096"


def _good_tar(path: Path, n: int = 5, size: int = 3000) -> bytes:
    with ShardWriter(path) as w:
        for i in range(n):
            w.write(f"k{i}", {"flac": bytes([i]) * size})
    return path.read_bytes()


@pytest.mark.parametrize("cut", ["mid_data", "mid_header", "member_boundary", "no_end_block"])
def test_truncated_shard_raises_one_error(tmp_path: Path, cut: str) -> None:
    data = _good_tar(tmp_path / "good.tar")
    first_data_end = 512 + 512 + 3000  # pax header + header + data (PAX records the key name)
    with tarfile.open(tmp_path / "good.tar") as tf:
        offsets = [m.offset for m in tf.getmembers()]
        data_end = tf.getmembers()[-1].offset_data + 3000
    cut_at = {
        "mid_data": first_data_end - 100,
        "mid_header": offsets[2] + 100,
        "member_boundary": offsets[2],
        "no_end_block": -(-data_end // 512) * 512,
    }[cut]
    bad = tmp_path / "bad.tar"
    bad.write_bytes(data[:cut_at])
    with pytest.raises(ShardError, match="truncated|corrupt"):
        list(iter_shard(bad))


def test_corrupt_header_mid_shard(tmp_path: Path) -> None:
    data = bytearray(_good_tar(tmp_path / "good.tar"))
    with tarfile.open(tmp_path / "good.tar") as tf:
        off = tf.getmembers()[3].offset
    data[off:off + 512] = b"\xab" * 512
    bad = tmp_path / "bad.tar"
    bad.write_bytes(bytes(data))
    with pytest.raises(ShardError, match="corrupt"):
        list(iter_shard(bad))


@pytest.mark.parametrize("content", [b"", b"this is not a tar file at all" * 50, b"\x00" * 100])
def test_garbage_file_raises_shard_error(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "g.tar"
    bad.write_bytes(content)
    with pytest.raises(ShardError):
        list(iter_shard(bad))
    with pytest.raises(ShardError, match="cannot open"):
        list(iter_shard(tmp_path / "missing.tar"))


def test_gzipped_shard(tmp_path: Path) -> None:
    data = _good_tar(tmp_path / "good.tar", n=3)
    gz = tmp_path / "s.tar.gz"
    gz.write_bytes(gzip.compress(data))
    got, errors = _split(list(iter_shard(gz)))
    assert errors == [] and sorted(got) == ["k0", "k1", "k2"]
    gz.write_bytes(gzip.compress(data)[:-200])
    with pytest.raises(ShardError):
        list(iter_shard(gz))


def test_webdataset_agrees(tmp_path: Path) -> None:
    """Our writer is read back the same by webdataset, and webdataset's writer by us."""
    from webdataset import TarWriter
    from webdataset.tariterators import group_by_keys, tar_file_iterator

    ours = tmp_path / "ours.tar"
    with ShardWriter(ours) as w:
        w.write("x/a", {"flac": b"1", "json": b"{}"})
        w.write("b", {"seg.flac": b"2"})
    with open(ours, "rb") as fh:
        wds = [{k: v for k, v in s.items() if not k.startswith("__")}
               for s in group_by_keys({**d, "__url__": "ours"} for d in tar_file_iterator(fh))]
    assert wds == [{"flac": b"1", "json": b"{}"}, {"seg.flac": b"2"}]

    theirs = tmp_path / "theirs.tar"
    with TarWriter(str(theirs), encoder=False) as tw:
        tw.write({"__key__": "x/a", "flac": b"1", "json": b"{}"})
        tw.write({"__key__": "b", "seg.flac": b"2"})
    got, errors = _split(list(iter_shard(theirs)))
    assert errors == [] and got == {"x/a": {"flac": b"1", "json": b"{}"}, "b": {"seg.flac": b"2"}}
