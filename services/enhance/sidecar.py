"""The sidecar as a step of the chain (``chain.py``): each segment's ``.json`` (its text and
where it came from, its ``quality`` block where annotated) and its FLAC at 24 kHz. What a later
step adds (the speaker label) goes into the sidecar it made."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from common.shards.audio import flac_bytes
from services.enhance.chain import OUT_RATE, Item, Step
from services.records import Sidecar

if TYPE_CHECKING:
    from services.enhance.context import StepContext
    from services.enhance.tally import QualityTally


class SidecarStep(Step):
    name: ClassVar[str] = "sidecar"
    fields: ClassVar[tuple[str, ...]] = (
        "text", "language", "source_key", "start", "end", "duration_seconds", "quality",
        "min_word_probability", "text_spoken", "text_spoken_by", "reading", "accent",
        "phonemes")

    def __init__(self, tally: QualityTally) -> None:
        self.tally = tally

    @classmethod
    def make(cls, ctx: StepContext) -> SidecarStep:
        return cls(ctx.tally)

    def run(self, batch: list[Item]) -> list[Item]:
        for it in batch:
            s, q = it.seg.spec, it.quality
            it.meta = Sidecar(text=s.text, language=s.language, source_key=s.key,
                              start=round(s.start, 3), end=round(s.end, 3),
                              duration_seconds=round(it.audio.size / OUT_RATE, 3),
                              quality=None if q is None else q.to_record(),
                              min_word_probability=s.min_word_probability, **s.forms.fields())
            if q is not None:
                self.tally.add(q)
            it.flac = flac_bytes(it.audio, OUT_RATE)
        return batch
