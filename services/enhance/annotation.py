"""The annotators as a step of the chain (``chain.py``): a batch's segments, input and restored
audio both in memory, through every annotator of ``quality/steps.py`` (adding one: a file and a
line there); each item gets its ``quality`` record. Where the overlap frames or the music score
of an item's input were found before (the re-cut, the rules before restoration), they are taken,
not found again."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from services.enhance.chain import OUT_RATE, Item, Step
from services.enhance.quality.steps import STEPS

if TYPE_CHECKING:
    from services.enhance.context import StepContext
    from services.enhance.quality.annotate import Annotator


class Annotate(Step):
    name: ClassVar[str] = "annotate"
    fields: ClassVar[tuple[str, ...]] = tuple(f for step in STEPS for f in step.fields)
    annotation: ClassVar[bool] = True

    def __init__(self, annotator: Annotator, in_rate: int) -> None:
        self.annotator = annotator
        self.in_rate = in_rate

    @classmethod
    def make(cls, ctx: StepContext) -> Annotate | None:
        return None if ctx.annotator is None else cls(ctx.annotator, ctx.in_rate)

    def load(self) -> None:
        self.annotator.load()

    def run(self, batch: list[Item]) -> list[Item]:
        from services.enhance.quality.annotate import AnnotationInput

        inputs = [AnnotationInput(
            it.id, it.seg.spec.text, it.seg.spec.language,
            it.before if it.before is not None else it.audio,
            self.in_rate if it.before is not None else OUT_RATE, it.audio, OUT_RATE,
            it.frames if it.frames is not None else it.known.get("overlap_frames"),
            it.around, it.known) for it in batch]
        for it, rec in zip(batch, self.annotator.annotate(inputs, batch[0].rs)):
            it.quality = rec
        return batch
