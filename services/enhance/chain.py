"""What a segment goes through between the reader and the tar, as declared steps: each has a
``name``, the sidecar ``fields`` it adds, ``load`` and ``run``. The stage composes them in the
order its spec lists them (``services/enhance/spec.py``, ``steps``), and the writer
(``writer.py``) writes what comes out of the last one, and nothing else.

Two kinds, in this order: a :class:`StreamStep` runs on the reader's stream, before and in the
model (the rules on the input audio, the restoration itself: ``run`` maps the items that come
to the items it lets through, restored or not); a :class:`Step` runs behind the model on the
restored segments, a batch at a time (the re-cut, the annotators, the sidecar, the side
outputs, the speaker labels).

The steps after restoration run on one thread (``Chain``): what waits for it is bounded in
seconds of audio (``ahead_seconds``), not only in segments. With annotations, segments are
gathered ``batch`` at a time (and at most ``batch_seconds`` of audio, which bounds the
annotations' working memory) and each step runs on the whole batch. A step may hold items back
and hand them on later (the speaker labels hold a source file's segments until it is complete)
and gives what it still holds at the end (``finish``).

A step marked ``annotation`` may fail without losing audio: the batch then goes on as it came
to that step, without it and the annotation steps after it, and each of its segments gets an
entry in ``errors``.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from common.node.allocator import give_back
from common.shards.writebehind import WriteBehind
from services.enhance.errors import SegmentError
from services.enhance.resampled import Resampled
from services.enhance.segments import CutSegment
from services.records import Sidecar, segment_id

if TYPE_CHECKING:
    from services.enhance.quality.overlap import Frames
    from services.enhance.quality.records import QualityRecord
    from services.enhance.writer import EnhancedWriter

log = logging.getLogger(__name__)

OUT_RATE = 24000  # the restored audio the steps take and the tar holds
NO_AUDIO = np.zeros(0, np.float32)  # an item's audio before restoration, or once encoded


@dataclass
class Item:
    """One segment on its way to the tar: its restored audio at 24 kHz, its input at the
    chain's ``in_rate`` (None: the restored audio stands for it) and what the steps found."""

    seg: CutSegment
    audio: np.ndarray
    before: np.ndarray | None = None
    around: tuple[np.ndarray, np.ndarray] | None = None  # the input either side, at in_rate
    known: dict[str, Any] = field(default_factory=dict)  # found on its input before restoration
    frames: Frames | None = None  # the overlap frames of its input, where found
    quality: QualityRecord | None = None
    meta: Sidecar | None = None
    flac: bytes = b""
    rs: Resampled = field(default_factory=Resampled)  # its batch's: each clip resampled once

    @property
    def id(self) -> str:
        s = self.seg.spec
        return segment_id(s.key, s.idx, s.part)


class Step(ABC):
    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]] = ()  # what it adds to each sidecar
    annotation: ClassVar[bool] = False  # its failure costs the batch annotations, not audio

    def load(self) -> None:
        """Nothing to load unless the step says so."""

    @abstractmethod
    def run(self, batch: list[Item]) -> list[Item]:
        """The items it hands on (in order; it may hold some back for a later call)."""

    def finish(self) -> list[Item]:
        """What it still holds once every segment has come (in order)."""
        return []

    def close(self) -> None:
        """Free what it holds (the shard is done or abandoned)."""


class StreamStep(ABC):
    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]] = ()

    def load(self) -> None:
        """Nothing to load unless the step says so."""

    @abstractmethod
    def run(self, items: Iterable[Item]) -> Iterator[Item]:
        """The items it lets through, in order."""


class Chain:
    """``put(item)`` in output order; ``close()`` runs what is left through every step, then
    closes the writer (the tar published whole)."""

    def __init__(self, steps: Sequence[Step], writer: EnhancedWriter, batch: int | None = None,
                 batch_seconds: float = 120.0, ahead: int = 8,
                 ahead_seconds: float = 60.0) -> None:
        self.steps = list(steps)
        self.writer = writer
        self.batch = None if batch is None else max(1, batch)  # None: each item on its own
        self.batch_samples = batch_seconds * OUT_RATE
        self.errors: list[SegmentError] = []
        self._pending: list[Item] = []
        self._behind: WriteBehind[Item] = WriteBehind(
            self._take, ahead, name="enhance-write", finish=self._finish,
            weight=lambda item: item.audio.size / OUT_RATE, capacity=ahead_seconds)

    def put(self, item: Item) -> None:
        self._behind.put(item)

    def _take(self, item: Item) -> None:
        if self.batch is None:  # nothing gathered, nothing held in a batch's heaps
            self._through([item], self.steps)
            return
        if self._pending and (sum(it.audio.size for it in self._pending) + item.audio.size
                              > self.batch_samples):
            self._flush()  # the batch would run past its seconds: it goes without this one
        self._pending.append(item)
        if len(self._pending) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        rs = Resampled()  # the batch's clips at the rates its steps share
        for it in batch:
            it.rs = rs
        self._through(batch, self.steps)
        # the batch's activations (DNSMOS, the speaker LSTM, the fidelity decode) are freed now;
        # what the heaps keep of them goes back (a 3-hour member's peak: -52 MB)
        give_back()

    def _through(self, items: list[Item], steps: Sequence[Step]) -> None:
        failed = False
        for step in steps:
            if not items:
                return
            if step.annotation and failed:
                continue
            if not step.annotation:
                items = step.run(items)
                continue
            try:
                items = step.run(items)
            except Exception as e:
                log.exception("quality annotation failed for %d segments", len(items))
                reason = f"quality:{type(e).__name__}:{str(e)[:120]}"
                self.errors += [{"key": it.id, "reason": reason} for it in items]
                for it in items:
                    it.quality = None
                failed = True
        for it in items:
            assert it.meta is not None  # the sidecar step's
            self.writer.write(it.id, it.flac, it.meta, it.seg.spec)

    def _finish(self) -> None:
        self._flush()
        for i, step in enumerate(self.steps):
            self._through(step.finish(), self.steps[i + 1:])

    def close(self) -> None:
        try:
            self._behind.join()
        except BaseException:
            self.writer.abort()
            raise
        finally:
            for step in self.steps:
                step.close()
        self.writer.close()

    def abort(self) -> None:
        self._behind.abort()  # what is pending is dropped
        self.writer.abort()
        for step in self.steps:
            step.close()
