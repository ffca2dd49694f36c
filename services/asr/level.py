"""A quiet file heard at a normal level.

Whisper's features are the log of the mel power, clamped to 8 units under the window's maximum
and then shifted by a fixed amount: the same speech 34 dB down reaches the encoder shifted by
about a unit, unlike anything it was trained on, and Silero's VAD hears less of it. A file
whose peak is under ``ONSEI_ASR_QUIET_PEAK_DBFS`` is raised to a peak of :data:`TARGET_DBFS`
before VAD and decoding; the source is left as it is (enhance reads its own copy), and a file
at a normal level is not touched at all (docs/asr.md, "Hard sets"). A file peaking under
:data:`SILENT_DBFS` is room tone or digital silence, not quiet speech: raised, its hiss would be
offered to Whisper as if it were speech, so it is left as it is. A long member held on scratch
disk (common/shards/spool.py) is read a range at a time and, raised, spooled again beside it.
"""

from __future__ import annotations

import numpy as np

from common.shards.spool import mapped, ranges

TARGET_DBFS = -6.0
SILENT_DBFS = -60.0


def heard_level(audio: np.ndarray, quiet_peak_dbfs: float) -> np.ndarray:
    """``audio`` raised to a :data:`TARGET_DBFS` peak when its peak is under
    ``quiet_peak_dbfs`` and over :data:`SILENT_DBFS`; otherwise ``audio`` itself."""
    if audio.size == 0:
        return audio
    # no file-sized temporary, and a spooled member's pages read a range at a time
    peak = max(max(float(r.max()), -float(r.min())) for r in ranges(audio))
    if peak <= 0.0 or not SILENT_DBFS <= 20.0 * np.log10(peak) < quiet_peak_dbfs:
        return audio
    gain = 10.0 ** (TARGET_DBFS / 20.0) / peak
    return mapped(audio, lambda r: np.asarray(r * gain, dtype=np.float32))
