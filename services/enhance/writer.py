"""Write behind: resample to 24 kHz, encode FLAC and append to the output tar on a thread."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np

from common.audio import flac_bytes, resample
from common.shards import ShardWriter
from common.writebehind import WriteBehind
from services.enhance.segments import CutSegment

OUT_RATE = 24000


class EnhancedWriter:
    """``put(segment, audio at rate)`` in output order; ``close()`` publishes the tar whole."""

    def __init__(self, path: Path, rate: int, ahead: int = 32) -> None:
        self.rate = rate
        self._writer = ShardWriter(path)
        self.written = 0
        self.seconds_out = 0.0
        self._behind: WriteBehind[tuple[CutSegment, np.ndarray]] = WriteBehind(
            lambda item: self._write(*item), ahead, name="enhance-write")

    def put(self, seg: CutSegment, audio: np.ndarray) -> None:
        self._behind.put((seg, audio))

    def _write(self, seg: CutSegment, audio: np.ndarray) -> None:
        out = resample(audio, self.rate, OUT_RATE)
        s = seg.spec
        meta = {
            "text": s.text,
            "language": s.language,
            "source_key": s.key,
            "start": round(s.start, 3),
            "end": round(s.end, 3),
            "duration_seconds": round(out.size / OUT_RATE, 3),
        }
        self._writer.write(f"{s.key}_{s.idx:04d}", {
            "flac": flac_bytes(out, OUT_RATE),
            "json": json.dumps(meta, ensure_ascii=False).encode("utf-8"),
        })
        self.written += 1
        self.seconds_out += out.size / OUT_RATE

    def close(self) -> None:
        try:
            self._behind.join()
        except BaseException:
            self._writer.abort()
            raise
        self._writer.close()

    def abort(self) -> None:
        # called while another error propagates: that one is reported, not the writer's
        with contextlib.suppress(BaseException):
            self._behind.join()
        self._writer.abort()
