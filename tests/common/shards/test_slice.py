"""common/shards/slice.py: a large member of a plain tar decoded from the shard, never held."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest

from common.shards.audio import decode_audio, decode_chunks, probe_seconds
from common.shards.members import iter_keys
from common.shards.slice import MemberSlice
from common.shards.tar import ShardError, ShardWriter, iter_shard
from fixtures.speechgen import wav_bytes


def _tone(seconds: float, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def _shard(path: Path) -> tuple[Path, bytes]:
    big = wav_bytes(_tone(3.0))  # ~96 kB
    with ShardWriter(path) as w:
        w.write("small", {"wav": wav_bytes(_tone(0.2)), "json": b"{}"})
        w.write("big", {"wav": big, "json": b'{"x": 1}'})
    return path, big


def test_large_member_is_left_in_the_tar_and_decodes_the_same(tmp_path: Path) -> None:
    path, big = _shard(tmp_path / "s.tar")
    keys = {k.key: k for k in iter_keys(path, leave_from=50_000)}
    assert isinstance(keys["small"].audio, bytes)
    left = keys["big"].audio
    assert isinstance(left, MemberSlice) and len(left) == len(big)
    assert left.read() == big and keys["big"].audio_bytes() == big
    assert keys["big"].data("json") == b'{"x": 1}'  # a sidecar is always read
    np.testing.assert_array_equal(decode_audio(left), decode_audio(big))
    chunks = list(decode_chunks(left, 16000))
    np.testing.assert_array_equal(np.concatenate(chunks), decode_audio(big))
    assert probe_seconds(left) == pytest.approx(3.0, abs=0.01)
    # without the option every member is bytes, as before
    assert all(isinstance(k.audio, bytes) for k in iter_keys(path))


def test_window_reads_only_its_member(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"HEAD" + b"0123456789" + b"TAIL")
    part = MemberSlice(p, 4, 10)
    with part.open() as f:
        assert f.read(3) == b"012"
        f.seek(-2, io.SEEK_END)
        assert f.read() == b"89"
        f.seek(100)
        assert f.read() == b"" and f.tell() == 10
    assert part.read() == b"0123456789"


def test_truncated_left_member_is_a_shard_error(tmp_path: Path) -> None:
    path, _ = _shard(tmp_path / "s.tar")
    data = path.read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[:len(data) // 2])  # inside the big member's bytes
    with pytest.raises(ShardError, match="truncated"):
        list(iter_shard(cut, leave_from=50_000))


def test_compressed_shard_keeps_members_in_memory(tmp_path: Path) -> None:
    path, big = _shard(tmp_path / "s.tar")
    gz = tmp_path / "s.tar.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    keys = {k.key: k for k in iter_keys(gz, leave_from=50_000)}
    assert keys["big"].audio == big  # no offsets in a compressed stream
