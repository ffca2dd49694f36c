"""A long member's samples on scratch disk: slices equal the in-memory decode, reading every
range of it leaves the process holding none of it, and the scratch file goes with the array."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from common.shards.audio import AudioError, decode_audio
from common.shards.spool import Spool, SpooledSamples, joined, mapped, ranges

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")


def _opus(seconds: float, tmp: Path) -> bytes:
    out = tmp / "noise.opus"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                    f"anoisesrc=color=pink:amplitude=0.1:sample_rate=48000:duration={seconds}",
                    "-c:a", "libopus", "-b:a", "24k", str(out)], check=True)
    return out.read_bytes()


def test_spooled_decode_equals_the_in_memory_one(tmp_path: Path) -> None:
    data = _opus(30, tmp_path)
    held = decode_audio(data, 16000)
    spooled = decode_audio(data, 16000, spool=(tmp_path / "spool", 10.0))
    assert isinstance(spooled, SpooledSamples) and not isinstance(held, SpooledSamples)
    assert spooled.size == held.size
    for a, b in [(0, 1000), (16000 * 7 + 3, 16000 * 19), (held.size - 5, held.size + 10)]:
        got = spooled[a:b]
        assert type(got) is np.ndarray and got.flags.writeable  # a copy, not the mapping
        np.testing.assert_array_equal(got, held[a:b])
    np.testing.assert_array_equal(np.concatenate([spooled[i:i + 4097]
                                                  for i in range(0, spooled.size, 4097)]), held)
    # under the limit (declared or decoded) the member stays in memory
    assert not isinstance(decode_audio(data, 16000, spool=(tmp_path / "spool", 60.0)),
                          SpooledSamples)


def test_a_file_past_the_limit_while_decoding_moves_to_the_spool(tmp_path: Path) -> None:
    wav = tmp_path / "x.wav"  # piped WAV: no declared duration, found long while decoding
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=16000:duration=12", "-f", "wav", "pipe:1"],
                   check=True, stdout=wav.open("wb"))
    held = decode_audio(wav.read_bytes(), 16000)
    spooled = decode_audio(wav.read_bytes(), 16000, spool=(tmp_path, 5.0))
    assert isinstance(spooled, SpooledSamples)
    np.testing.assert_array_equal(spooled[0:spooled.size], held)


def test_the_scratch_file_is_unnamed_and_a_failed_decode_leaves_nothing(tmp_path: Path) -> None:
    data = _opus(20, tmp_path)
    spool_dir = tmp_path / "spool"
    audio = decode_audio(data, 16000, spool=(spool_dir, 5.0))
    assert list(spool_dir.iterdir()) == []  # the mapping alone keeps the unnamed file
    with pytest.raises(AudioError, match="too_long"):
        decode_audio(data, 16000, spool=(spool_dir, 5.0), max_seconds=10.0)
    assert list(spool_dir.iterdir()) == []
    assert float(np.abs(audio[0:audio.size]).max()) > 0


def test_reading_every_range_leaves_the_process_holding_none_of_it(tmp_path: Path) -> None:
    # 120 MB of samples read a second at a time, as VAD and the encoder windows read a member:
    # resident memory (mapped file pages included) stays far under the member's size
    script = textwrap.dedent(f"""
        import numpy as np, resource
        from common.shards.spool import Spool
        spool = Spool({str(tmp_path)!r})
        for i in range(30):
            spool.append(np.full(1_000_000, i, dtype=np.float32))
        a = spool.samples()
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        total = 0.0
        for i in range(0, a.size, 16000):
            total += float(a[i:i + 16000].sum())
        assert total == sum(i * 1_000_000 for i in range(30)), total
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    grew = float(out.stdout.strip())
    assert grew < 20, f"reading a 120 MB spool grew peak RSS by {grew:.0f} MB"


def test_an_empty_spool_is_an_empty_array(tmp_path: Path) -> None:
    assert Spool(tmp_path).samples().size == 0


def test_derived_from_a_spooled_member_is_spooled_beside_it(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for i in range(3):
        spool.append(np.full(1000, i + 1, dtype=np.float32))
    a = spool.samples()
    assert [float(r[0]) for r in ranges(a, 1000)] == [1.0, 2.0, 3.0]
    doubled = mapped(a, lambda r: r * 2)
    assert isinstance(doubled, SpooledSamples)
    np.testing.assert_array_equal(doubled[0:doubled.size], np.repeat([2.0, 4.0, 6.0], 1000))
    assert list(tmp_path.iterdir()) == []  # unnamed, as the member's own
    joined_ = joined(a, [a[0:10], np.zeros(5, np.float32)])
    assert isinstance(joined_, SpooledSamples) and joined_.size == 15
    # an array in memory stays in memory
    held = np.arange(4, dtype=np.float32)
    assert type(mapped(held, lambda r: r + 1)) is np.ndarray
    np.testing.assert_array_equal(joined(held, [held, held]), np.tile(held, 2))

