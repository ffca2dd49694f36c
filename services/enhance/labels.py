"""The speaker labels as a step of the chain (``chain.py``): a source file's segments are held
(their FLAC and sidecar, not their audio) until the file is complete, clustered by speaker
(``speakers.py``) and handed on in order, each sidecar with its ``speaker_id``. Its segments
reach the step one after another (a file lives in one raw shard), so nothing waits past the
next file."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from services.enhance.chain import NO_AUDIO, Item, Step
from services.enhance.resampled import Resampled
from services.enhance.speakers import (
    FUSED,
    RESEMBLYZER,
    UNKNOWN_NEAR,
    HeldSegments,
    SpeakerLabeller,
    label_embedding,
)
from services.records import Sidecar

if TYPE_CHECKING:
    from pathlib import Path

    from services.enhance.context import StepContext
    from services.enhance.tally import QualityTally

class Labels(Step):
    name: ClassVar[str] = "labels"
    fields: ClassVar[tuple[str, ...]] = ("speaker_id",)

    def __init__(self, tally: QualityTally, scratch: Path, threshold: float | None = None,
                 unknown_near: float = UNKNOWN_NEAR, fused: bool = False) -> None:
        self.tally = tally
        self._held: HeldSegments[Item, Sidecar] = HeldSegments(directory=scratch)
        self._out: list[Item] = []
        self.labeller: SpeakerLabeller[int] = SpeakerLabeller(
            self._emit, threshold, unknown_near, FUSED if fused else RESEMBLYZER)

    @classmethod
    def make(cls, ctx: StepContext) -> Labels | None:
        """None without the annotations (nothing to label by); CAM++'s embeddings beside
        Resemblyzer's when the annotator has the model."""
        ann, s = ctx.annotator, ctx.settings
        if ann is None:
            return None
        return cls(ctx.tally, ctx.scratch, s.quality_speaker_label_threshold,
                   s.quality_speaker_unknown_near, fused=ann.label_model is not None)

    def run(self, batch: list[Item]) -> list[Item]:
        for it in batch:
            assert it.meta is not None  # the sidecar step's
            q = it.quality
            # held without its audio: only its name, sidecar and FLAC go on
            it.audio, it.before, it.around, it.rs = NO_AUDIO, None, None, Resampled()
            ticket = self._held.hold(it, it.flac, it.meta)
            it.flac = b""
            self.labeller.put(it.seg.spec.key, None if q is None else label_embedding(q),
                              ticket, None if q is None else q.speaker_parts)
        out, self._out = self._out, []
        return out

    def _emit(self, ticket: int, speaker_id: str | None) -> None:
        it, flac, meta = self._held.take(ticket)
        it.flac = flac
        it.meta = meta if speaker_id is None else meta.model_copy(
            update={"speaker_id": speaker_id})
        self._out.append(it)

    def finish(self) -> list[Item]:
        self.labeller.flush()
        self.tally.speaker_files = self.labeller.files
        self.tally.speakers = self.labeller.speakers
        out, self._out = self._out, []
        return out

    def close(self) -> None:
        self._held.close()
