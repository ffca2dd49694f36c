"""Restoration as a step of the chain (``chain.py``): the segments that come through the model
(``flow.py``: packed batches of chunks), each out at 24 kHz as soon as it is finished, in the
order they came."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from common.shards.audio import resample
from services.enhance.chain import OUT_RATE, Item, StreamStep
from services.enhance.flow import Enhancer

if TYPE_CHECKING:
    import numpy as np

    from services.enhance.context import StepContext
    from services.enhance.segments import CutSegment


class Restore(StreamStep):
    name: ClassVar[str] = "restore"
    fields: ClassVar[tuple[str, ...]] = ()  # the restored audio: the tar's FLAC

    def __init__(self, engine: Enhancer) -> None:
        self.engine = engine
        self.seconds_in = 0.0  # input audio restored

    @classmethod
    def make(cls, ctx: StepContext) -> Restore:
        s, b, geom = ctx.settings, ctx.backend, ctx.geometry
        assert b is not None and geom is not None  # the stage gives both
        return cls(Enhancer(b, geom, s.enhance_batch_size, s.enhance_pack_rounds, ctx.clock,
                            finish=lambda audio: to_out_rate(audio, b.out_rate)))

    def load(self) -> None:
        self.engine.backend.load()

    def run(self, items: Iterable[Item]) -> Iterator[Item]:
        waiting: dict[int, Item] = {}

        def segments() -> Iterator[CutSegment]:
            for it in items:
                waiting[it.seg.serial] = it
                yield it.seg

        rate = self.engine.backend.in_rate
        for seg, audio in self.engine.run(segments()):
            it = waiting.pop(seg.serial)
            it.audio = audio
            self.seconds_in += seg.seg_len / rate
            yield it


def to_out_rate(audio: np.ndarray, rate: int) -> np.ndarray:
    """A restored segment at the model's ``rate`` -> at 24 kHz, as soon as it is finished, so
    what then waits (for earlier segments, in the write-behind queue, in the annotation batch)
    holds half the samples of a 48 kHz model's output; the annotations resample from 24 kHz
    (all they use is below 8 kHz)."""
    return resample(audio, rate, OUT_RATE)
