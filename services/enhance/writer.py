"""The enhanced tar: each segment the steps hand on (``chain.py``) as ``<id>.flac`` (24 kHz)
and ``<id>.json`` (its sidecar), in order, published whole at ``close()``. It writes and
nothing else: the sidecar, its annotations and labels are the steps'."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from common.shards.tar import ShardWriter

if TYPE_CHECKING:
    from services.enhance.segments import SegmentSpec
    from services.records import Sidecar


class EnhancedWriter:
    def __init__(self, path: Path) -> None:
        self._writer = ShardWriter(path)
        self.written = 0
        self.seconds_out = 0.0
        self.durations: list[tuple[SegmentSpec, float]] = []  # what was written, for the check

    def write(self, name: str, flac: bytes, meta: Sidecar, spec: SegmentSpec) -> None:
        """``spec``: the segment it holds (what was written, for the output check)."""
        assert meta.duration_seconds is not None  # the sidecar step gives every one
        self._writer.write(name, {"flac": flac, "json": meta.to_json().encode("utf-8")})
        self.written += 1
        self.seconds_out += meta.duration_seconds
        self.durations.append((spec, meta.duration_seconds))

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        self._writer.abort()
