"""Read and decode a shard's members in a background thread, one or two ahead of the model.

Decoding (PyAV/ffmpeg, resampling) releases the GIL, so the next file is ready when the model
finishes this one. The queue is short: memory holds at most ``depth`` decoded files in waiting.
A member longer than ``HOLD_SECONDS`` is decoded to a scratch file next to the shard instead
and read back a range at a time (common/shards/spool.py): a 3-hour member would be 690 MB.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.settings import Settings
from common.shards.audio import AudioError, decode_audio
from common.shards.members import LEAVE_IN_TAR_BYTES, KeyAudio, iter_keys
from common.shards.readahead import read_ahead
from common.shards.spool import ranges

SAMPLE_RATE = 16000
HOLD_SECONDS = 600.0  # longer members are spooled to scratch disk: 38 MB at most held each


@dataclass
class Decoded:
    key: str
    audio: np.ndarray | None  # None when ``error`` is set
    error: str | None = None  # reason, recorded as ``error:<reason>``
    decode_seconds: float = 0.0
    notes: list[str] | None = None  # e.g. ``truncated:...``: kept, but recorded on the line


def decode_key(k: KeyAudio, settings: Settings, spool_dir: Path | None = None,
               hold_seconds: float = HOLD_SECONDS) -> Decoded:
    """One key's outcome (common/shards/members.py chose its audio member) decoded at 16 kHz;
    with ``spool_dir``, one longer than ``hold_seconds`` is held there, not in memory."""
    if k.key is None or k.error is not None:
        return Decoded(k.key or k.name, None, k.error or "no_audio")
    t0 = time.perf_counter()
    notes: list[str] = []
    try:
        audio = decode_audio(k.audio, SAMPLE_RATE, max_seconds=settings.max_member_seconds,
                             min_seconds=settings.min_member_seconds, notes=notes,
                             spool=None if spool_dir is None else (spool_dir, hold_seconds))
    except AudioError as e:
        return Decoded(k.key, None, e.reason)
    if not all(np.isfinite(r).all() for r in ranges(audio)):
        return Decoded(k.key, None, "non_finite_samples")
    return Decoded(k.key, audio, None, time.perf_counter() - t0, notes or None)


def _decoded(shard: Path, settings: Settings, spool_dir: Path) -> Iterator[Decoded]:
    """Each key's outcome in shard order; a bad sidecar of a good key keeps its own line."""
    for k in iter_keys(shard, settings.max_member_bytes,
                       max_sidecar_bytes=settings.max_sidecar_bytes,
                       leave_from=LEAVE_IN_TAR_BYTES):
        if k.key is not None and k.error is None:
            for note in k.notes:
                yield Decoded(k.key, None, note.rsplit(":", 1)[0])
        yield decode_key(k, settings, spool_dir)


def decoded_members(shard: Path, settings: Settings, depth: int = 2
                    ) -> Generator[Decoded, None, None]:
    """Decoded members in shard order; a shard-level error (truncated tar) is raised here. Long
    members are spooled next to the shard (the stage's work directory). Closing it stops the
    decoding thread."""
    return read_ahead(_decoded(shard, settings, shard.parent), depth, name="asr-decode")
