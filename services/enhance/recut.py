"""The speaker re-cut as a step (``chain.py``): each segment that holds a speaker change is
replaced by its pieces (``turns.py``: named ``<key>_<idx>-<part>``), and each piece's edges
trimmed where two voices sound at once (``edges.py``). Each piece carries the overlap frames of
its input (its segment's, clipped to it: the overlap annotation takes them, not finding them
again) and the input either side of it (the rest of its segment, then the file's: the music
score looks in the pauses there)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from services.enhance.chain import OUT_RATE, Item, Step
from services.enhance.cuts import CutSettings, segment_pieces
from services.enhance.edges import fires
from services.enhance.turns import MIN_PIECE, Piece, cut_segment
from services.records import segment_id

if TYPE_CHECKING:
    from services.enhance.context import StepContext
    from services.enhance.quality.annotate import Annotator
    from services.enhance.quality.overlap import Frames
    from services.enhance.tally import QualityTally


class Recut(Step):
    name: ClassVar[str] = "recut"
    fields: ClassVar[tuple[str, ...]] = ("part",)  # in the segment id, and its own times, text
    annotation: ClassVar[bool] = True  # found by the annotation models

    def __init__(self, annotator: Annotator, cuts: CutSettings, in_rate: int,
                 tally: QualityTally) -> None:
        self.annotator = annotator
        self.cuts = cuts
        self.in_rate = in_rate
        self.tally = tally
        self.trimmed: dict[str, float] = {}  # segment -> seconds trimmed off its pieces

    @classmethod
    def make(cls, ctx: StepContext) -> Recut | None:
        """None without the annotations or with ``ONSEI_QUALITY_SPEAKER_CHANGES`` off."""
        s = ctx.settings
        if ctx.annotator is None or not s.quality_speaker_changes:
            return None
        return cls(ctx.annotator, CutSettings(
            s.quality_speaker_change_threshold, s.quality_speaker_change_gap_threshold,
            s.quality_overlap_trim_seconds, s.quality_overlap_cuts), ctx.in_rate, ctx.tally)

    def run(self, batch: list[Item]) -> list[Item]:
        for it in batch:  # found before restoration (early.py): not found again
            it.frames = it.known.pop("overlap_frames", it.frames)
        todo = [i for i, it in enumerate(batch)
                if it.seg.spec.words and len(it.seg.spec.words) > 1
                and it.audio.size > 2 * MIN_PIECE * OUT_RATE]
        if not todo:
            return batch
        cfg, rs = self.cuts, batch[0].rs
        wins = self.annotator.speaker.windows([rs(batch[i].audio, OUT_RATE, 16000)
                                               for i in todo])
        out = list(batch)
        trimmed: dict[str, float] = {}  # kept only if the whole batch is cut (else written whole)
        for i, w in reversed(list(zip(todo, wins))):
            it = batch[i]
            # on the input, as the overlap annotation is
            src, rate = (it.before, self.in_rate) if it.before is not None else (it.audio,
                                                                                 OUT_RATE)
            frames = None
            if cfg.needs_fires:
                frames = it.frames = it.frames if it.frames is not None else \
                    self.annotator.overlap.frames(src, rate, rs)
            parts, kept = segment_pieces(it.seg.spec, w, None if frames is None
                                         else fires(frames), cfg)
            if len(parts) > 1:
                self.tally.cut_segments += 1
                self.tally.speaker_changes += len(parts) - 1
            if kept != parts:
                self._count_trim(it, parts, kept, trimmed)
            if len(kept) > 1 or kept != parts:
                out[i:i + 1] = self._pieces(it, kept, frames, rate)
        self.trimmed.update(trimmed)
        return out

    def _pieces(self, it: Item, kept: list[Piece], frames: Frames | None,
                rate: int) -> list[Item]:
        cut = cut_segment(it.seg, it.audio, OUT_RATE, it.before, self.in_rate, kept)
        return [Item(seg, a, b, around_piece(it, seg.spec.start, b, self.in_rate),
                     frames=None if frames is None else frames.clip(
                         round(p.start * rate) / rate, (a if b is None else b).size / rate),
                     rs=it.rs)
                for p, (seg, a, b) in zip(kept, cut)]

    def _count_trim(self, it: Item, parts: list[Piece], kept: list[Piece],
                    trimmed: dict[str, float]) -> None:
        s = it.seg.spec
        trimmed[segment_id(s.key, s.idx)] = (sum(p.end - p.start for p in parts)
                                             - sum(p.end - p.start for p in kept))
        self.tally.overlap_trimmed += sum(p not in parts for p in kept)
        self.tally.overlap_dropped += len(parts) - len(kept)
        self.tally.overlap_trimmed_words += (sum(len(p.words) for p in parts)
                                             - sum(len(p.words) for p in kept))


def around_piece(it: Item, start: float, piece: np.ndarray | None,
                 rate: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The input either side of a piece starting at ``start`` (s) cut out of ``it``'s
    segment: the rest of its segment there, then the file's, as much as the segment's
    margin."""
    if it.around is None or it.before is None or piece is None:
        return None
    left, right = it.around
    m = left.size
    a = m + round((start - it.seg.spec.start) * rate)
    b = a + piece.size
    full = np.concatenate([left, it.before, right])
    return full[max(0, a - m):a].copy(), full[b:b + m].copy()
