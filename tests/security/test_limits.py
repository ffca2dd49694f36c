"""Limits that bound what one hostile member can cost: bytes per member, decoded duration,
and reading tar members without ever writing them to disk by name."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from common.settings import Settings
from common.shards.audio import AudioError, decode_audio
from common.shards.tar import MemberError, Sample, iter_shard
from fixtures.speechgen import make_tar
from tests.reliability.flacgen import silent_flac


def test_defaults_bound_members():
    s = Settings()
    assert 0 < s.max_member_bytes <= 4 * 1024**3
    assert 0 < s.max_member_seconds <= 24 * 3600
    assert 0 < s.max_sidecar_bytes <= 16 * 1024**2


def test_member_over_byte_limit_is_an_error_and_the_rest_goes_on(tmp_path):
    shard = make_tar(tmp_path / "s.tar", [("a.wav", b"x" * 10), ("big.wav", b"y" * 5000),
                                      ("c.wav", b"z" * 10)])
    out = list(iter_shard(shard, max_member_bytes=1000))
    errors = [o for o in out if isinstance(o, MemberError)]
    samples = [o.key for o in out if isinstance(o, Sample)]
    assert len(errors) == 1 and errors[0].reason.startswith("member_too_large:5000")
    assert samples == ["a", "c"]


def test_members_never_written_to_disk(tmp_path, monkeypatch):
    """Reading a shard with hostile names creates no file anywhere (cwd or beside the tar)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    shard = make_tar(tmp_path / "s.tar", [("../escape.wav", b"a"), ("/tmp/abs-onsei.wav", b"b"),
                                      ("ok.wav", b"c")])
    before = set(os.listdir(tmp_path))
    out = list(iter_shard(shard))
    assert {o.reason for o in out if isinstance(o, MemberError)} == {
        "unsafe_member:parent_traversal", "unsafe_member:absolute_path"}
    assert set(os.listdir(tmp_path)) == before and os.listdir(work) == []
    assert not Path("/tmp/abs-onsei.wav").exists()


def flac_with_declared_samples(data: bytes, total: int) -> bytes:
    """Set STREAMINFO's total-samples field (36 bits after rate/channels/bits) of a FLAC."""
    assert data[:4] == b"fLaC"
    off = 8 + 10  # "fLaC" + block header, then min/max block and frame sizes
    word = int.from_bytes(data[off:off + 8], "big")
    word = (word & ~((1 << 36) - 1)) | total
    return data[:off] + word.to_bytes(8, "big") + data[off + 8:]


@pytest.fixture(scope="module")
def three_hour_flac() -> bytes:
    """3 h of 8 kHz silence, no declared length (like a streamed encode): ~0.24 MB."""
    return silent_flac(3 * 3600)


def _refused(data: bytes, max_seconds: float) -> tuple[str, int]:
    """The reason decoding ``data`` was refused, and the peak memory it took to refuse it."""
    tracemalloc.start()
    try:
        with pytest.raises(AudioError) as ei:
            decode_audio(data, 16000, max_seconds=max_seconds)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return ei.value.reason, peak


def test_duration_limit_stops_decoding_early(three_hour_flac):
    """No declared length: rejected after decoding ~limit seconds, not 3 h (691 MB as 16 kHz
    f32)."""
    assert len(three_hour_flac) < 8 * 1024**2
    reason, peak = _refused(three_hour_flac, max_seconds=300)
    assert reason == "too_long"
    assert peak < 120 * 1024**2, f"peak {peak / 1e6:.0f} MB"


def test_declared_duration_rejected_up_front(three_hour_flac):
    declared = flac_with_declared_samples(three_hour_flac, 10800 * 8000)
    from common.shards.audio import probe_seconds

    assert probe_seconds(declared) == pytest.approx(10800)
    reason, peak = _refused(declared, max_seconds=3600)
    assert reason == "too_long"
    assert peak < 20 * 1024**2
