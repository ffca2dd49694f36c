"""Write behind: resample to 24 kHz, encode FLAC and append to the output tar on a thread."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path

import numpy as np

from common.audio import flac_bytes, resample
from common.shards import ShardWriter
from services.enhance.segments import CutSegment, SegmentSpec

OUT_RATE = 24000
_END = object()


class EnhancedWriter:
    """``put(segment, audio at rate)`` in output order; ``close()`` publishes the tar whole."""

    def __init__(self, path: Path, rate: int, ahead: int = 32) -> None:
        self.rate = rate
        self._writer = ShardWriter(path)
        self._q: queue.Queue = queue.Queue(maxsize=ahead)
        self._error: BaseException | None = None
        self.written = 0
        self.seconds_out = 0.0
        self.durations: list[tuple[SegmentSpec, float]] = []  # what was written, for the check
        self._thread = threading.Thread(target=self._work, name="enhance-write", daemon=True)
        self._thread.start()

    def put(self, seg: CutSegment, audio: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._q.put((seg, audio))

    def _work(self) -> None:
        while True:
            item = self._q.get()
            if item is _END:
                return
            if self._error is not None:
                continue  # drain so put() never blocks forever
            seg, audio = item
            try:
                self._write(seg, audio)
            except BaseException as e:  # noqa: BLE001 - re-raised in the producer
                self._error = e

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
        self.durations.append((s, meta["duration_seconds"]))

    def close(self) -> None:
        self._q.put(_END)
        self._thread.join()
        if self._error is not None:
            self._writer.abort()
            raise self._error
        self._writer.close()

    def abort(self) -> None:
        self._q.put(_END)
        self._thread.join()
        self._writer.abort()
