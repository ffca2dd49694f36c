"""A quiet file heard at a normal level (services/asr/level.py): raised only when its peak is
under the setting and over silence, never clipped, and a file at a normal level untouched; a
long member on scratch disk read and raised a range at a time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from services.asr.level import SILENT_DBFS, TARGET_DBFS, heard_level


def tone(peak_dbfs: float) -> np.ndarray:
    t = np.arange(16000) / 16000
    return np.asarray(np.sin(2 * np.pi * 220 * t) * 10 ** (peak_dbfs / 20), dtype=np.float32)


def peak_dbfs(audio: np.ndarray) -> float:
    return float(20 * np.log10(np.max(np.abs(audio))))


@pytest.mark.parametrize("level", [-40.0, -25.0, SILENT_DBFS + 1])
def test_a_quiet_file_is_raised_to_the_target_peak(level: float) -> None:
    quiet = tone(level)
    raised = heard_level(quiet, -20.0)
    assert raised.dtype == np.float32 and raised.shape == quiet.shape
    assert peak_dbfs(raised) == pytest.approx(TARGET_DBFS, abs=0.01)
    # the same waveform, only louder
    assert np.allclose(raised / np.max(np.abs(raised)), quiet / np.max(np.abs(quiet)), atol=1e-5)


@pytest.mark.parametrize("level", [-20.0, -6.0, -1.0, SILENT_DBFS - 5])
def test_normal_level_and_near_silence_are_left_as_they_are(level: float) -> None:
    audio = tone(level)
    assert heard_level(audio, -20.0) is audio


def test_silence_empty_and_never_are_left_as_they_are() -> None:
    zero = np.zeros(1600, np.float32)
    assert heard_level(zero, -20.0) is zero
    empty = np.zeros(0, np.float32)
    assert heard_level(empty, -20.0) is empty
    quiet = tone(-40.0)
    assert heard_level(quiet, -120.0) is quiet  # the setting's "never"


def test_a_pass_over_a_spooled_member_holds_a_range_at_a_time(tmp_path: Path) -> None:
    # a quiet 120 MB member's peak found and the member raised (services/asr/level.py), as
    # asr does before VAD: neither the reading nor the raised copy is held whole
    script = textwrap.dedent(f"""
        import numpy as np, resource
        from common.shards.spool import Spool
        from services.asr.level import heard_level
        spool = Spool({str(tmp_path)!r})
        for i in range(30):
            spool.append(np.full(1_000_000, 0.001 * (i % 3 + 1), dtype=np.float32))
        a = spool.samples()
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        raised = heard_level(a, -20.0)
        assert raised is not a and raised.size == a.size
        assert abs(float(raised[2_000_000:2_000_001][0]) - 10 ** (-6 / 20)) < 1e-4
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    grew = float(out.stdout.strip())
    assert grew < 30, f"raising a 120 MB spooled member grew peak RSS by {grew:.0f} MB"
