"""Read and decode a shard's members in a background thread, one or two ahead of the model.

Decoding (PyAV/ffmpeg, resampling) releases the GIL, so the next file is ready when the model
finishes this one. The queue is short: memory holds at most ``depth`` decoded files in waiting.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.settings import Settings
from common.shards.audio import AUDIO_EXTENSIONS, AudioError, decode_audio
from common.shards.members import iter_keys
from common.shards.readahead import read_ahead
from common.shards.tar import MemberError, Sample

SAMPLE_RATE = 16000


@dataclass
class Decoded:
    key: str
    audio: np.ndarray | None  # None when ``error`` is set
    error: str | None = None  # reason, recorded as ``error:<reason>``
    decode_seconds: float = 0.0
    notes: list[str] | None = None  # e.g. ``truncated:...``: kept, but recorded on the line


def audio_ext(files: dict[str, bytes]) -> str | None:
    """The member holding the audio: its last extension part is an audio format."""
    for ext in sorted(files):
        if ext.rsplit(".", 1)[-1] in AUDIO_EXTENSIONS:
            return ext
    return None


def decode_item(item: Sample | MemberError, settings: Settings) -> Decoded:
    import time

    if isinstance(item, MemberError):
        return Decoded(item.key or item.name, None, item.reason)
    ext = audio_ext(item.files)
    if ext is None:
        return Decoded(item.key, None, "no_audio")
    t0 = time.perf_counter()
    notes: list[str] = []
    try:
        audio = decode_audio(item.files[ext], SAMPLE_RATE, max_seconds=settings.max_member_seconds,
                             min_seconds=settings.min_member_seconds, notes=notes)
    except AudioError as e:
        return Decoded(item.key, None, e.reason)
    if not np.isfinite(audio).all():
        return Decoded(item.key, None, "non_finite_samples")
    return Decoded(item.key, audio, None, time.perf_counter() - t0, notes or None)


def _chosen(shard: Path, settings: Settings) -> Iterator[Sample | MemberError]:
    """The shard's keys as common.shards.members decides them (the rule enhance uses too): a key's
    error as a MemberError, its audio alone as a Sample; a bad sidecar keeps its own line."""
    for k in iter_keys(shard, settings.max_member_bytes,
                       max_sidecar_bytes=settings.max_sidecar_bytes):
        if k.key is not None and k.error is None:
            for note in k.notes:
                yield MemberError(k.key, k.key, note.rsplit(":", 1)[0])
            yield Sample(k.key, {k.ext: k.audio})  # type: ignore[dict-item]
        else:
            yield MemberError(k.key, k.name, k.error or "no_audio")


def decoded_members(shard: Path, settings: Settings, depth: int = 2) -> Iterator[Decoded]:
    """Decoded members in shard order; a shard-level error (truncated tar) is raised here."""
    items = (decode_item(item, settings) for item in _chosen(shard, settings))
    return read_ahead(items, depth, name="asr-decode")
