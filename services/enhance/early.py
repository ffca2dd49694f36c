"""The filter rules whose fields exist before restoration (services/rules/, ``Phase.INPUT``),
applied to each cut segment's input as it leaves the reader: a segment they drop never reaches
the model, the annotators, the signatures or the tar (docs/quality.md, "filter rules").

Each input field is computed here as the annotations compute it (the same call on the same
samples, rounded as the sidecar writes it), so a segment kept here and judged again by
tokenize gets the same verdict from the same rule. A rule judges the asr segment whole, before
the speaker re-cut (``turns.py``): its pieces are judged again after restoration.

What is dropped stays visible and recoverable: the enhance done record holds the policy in
force (``quality_filter``), the first dropped segments and the tally of all (``skipped``,
``skipped_tally``: the shape tokenize writes, services/rules/stats.py), and the asr output is
untouched, so enhance run again with other ``ONSEI_FILTER_*`` settings restores them without
decoding again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from services.enhance.chain import Item, StreamStep
from services.enhance.quality import music
from services.enhance.quality.overlap import MIN_SECONDS as MIN_OVERLAP_SECONDS
from services.enhance.resampled import Resampled
from services.records import Quality, SkippedSegment, segment_id
from services.rules.policy import FilterPolicy
from services.rules.quality import Phase, reasons
from services.rules.skipped import SkipLog
from services.rules.stats import FilterStats

if TYPE_CHECKING:
    from services.enhance.context import StepContext
    from services.enhance.quality.annotate import Annotator
    from services.enhance.segments import SegmentSpec

SHARE_DIGITS = 3  # as quality/records.py writes a share (music, overlap)



@dataclass
class SegmentInput:
    """One cut segment's input at ``rate``, the input either side of it (its restoration
    margin: the file's audio, zeros past its ends) and the resampler its fields share."""

    audio: np.ndarray
    rate: int
    around: tuple[np.ndarray, np.ndarray] | None = None
    rs: Resampled = field(default_factory=Resampled)


# an input field -> how the annotations compute it: (annotator, the segment's input, what it
# found on the way, kept for the steps after restoration: ``EarlyFilter.found``)
InputField = Callable[["Annotator", SegmentInput, dict[str, Any]], Any]


def _overlap(ann: Annotator, x: SegmentInput, found: dict[str, Any]) -> float | None:
    """The annotation's overlap, its frames kept (the re-cut and the annotation
    take them instead of finding them again)."""
    if x.rs(x.audio, x.rate, SR).size < MIN_OVERLAP_SECONDS * SR:
        return None
    frames = found["overlap_frames"] = ann.overlap.frames(x.audio, x.rate, x.rs)
    return ann.input_overlap(x.audio, x.rate, x.rs, frames=frames)


def _music(ann: Annotator, x: SegmentInput, found: dict[str, Any]) -> float | None:
    """The annotation's music score (``MusicStep``: the same call), kept so the annotation
    does not score the segment again."""
    rs, rate = x.rs, x.rate
    around = None if x.around is None else (rs(x.around[0], rate, music.SR),
                                            rs(x.around[1], rate, music.SR))
    [score] = music.input_scores(ann.vad.windows, [rs(x.audio, rate, music.SR)], [around])
    found["music"] = score
    return score


INPUT_FIELDS: dict[str, InputField] = {"overlap": _overlap, "music": _music}
SR = 16000


class EarlyFilter(StreamStep):
    """A step of the chain (``chain.py``) before the model: the segments the rules keep go on,
    each with the fields computed on its input (``Item.known``: its music score, its overlap
    frames), not computed again. ``keeps(spec, input)`` judges one; ``dropped``: the names
    (``<key>_<idx>``) of those it dropped, for the output check."""

    name: ClassVar[str] = "input_rules"
    fields: ClassVar[tuple[str, ...]] = ()  # it drops; the annotations write what it read

    @classmethod
    def make(cls, ctx: StepContext) -> EarlyFilter | None:
        """Only with the annotations: their models compute the fields (without them no rule
        reads a field at all)."""
        if ctx.annotator is None:
            return None
        return cls(FilterPolicy.from_settings(ctx.settings), ctx.annotator, ctx.in_rate)

    def run(self, items: Iterable[Item]) -> Iterator[Item]:
        for it in items:
            assert it.before is not None  # the input, before restoration
            if self.keeps(it.seg.spec, SegmentInput(it.before, self.in_rate, it.around)):
                it.known.update(self.found)
                yield it

    def __init__(self, policy: FilterPolicy, annotator: Annotator, in_rate: int = SR) -> None:
        self.in_rate = in_rate
        self.policy = policy
        self.rules = policy.at(Phase.INPUT)
        fields = dict.fromkeys(r.reads for r in self.rules)
        unknown = [f for f in fields if f not in INPUT_FIELDS]
        if unknown:  # a rule declared on the input whose field enhance cannot compute there
            raise ValueError(f"input fields without a computation: {', '.join(unknown)}")
        self.reads = list(fields)
        self.annotator = annotator
        self.log = SkipLog()
        self.dropped: set[str] = set()
        self.dropped_seconds = 0.0
        self.seconds = 0.0  # spent computing the fields
        self.found: dict[str, Any] = {}

    @property
    def active(self) -> bool:
        return bool(self.rules)

    def keeps(self, spec: SegmentSpec, x: SegmentInput) -> bool:
        self.found = {}
        if not self.rules:
            return True
        t0 = time.perf_counter()
        values = {f: INPUT_FIELDS[f](self.annotator, x, self.found) for f in self.reads}
        self.seconds += time.perf_counter() - t0
        quality = Quality.model_validate({f: round(v, SHARE_DIGITS) if isinstance(v, float)
                                          else v for f, v in values.items()})
        why = reasons(self.rules, quality)
        if not why:
            return True
        name = segment_id(spec.key, spec.idx)
        seconds = round(spec.end - spec.start, 3)
        self.dropped.add(name)
        self.dropped_seconds += seconds
        self.log.add(SkippedSegment(key=name, reasons=why, seconds=seconds, quality=quality))
        return False

    def stats(self) -> dict[str, Any]:
        """The done record's ``quality_filter``, ``skipped`` and ``skipped_tally`` (None when
        no rule applies before restoration: nothing written)."""
        if not self.rules:
            return {}
        tally = self.log.tally
        return {"quality_filter": FilterStats(
                    **{k: v for k, v in self.policy.describe().items() if k != "dedup"},
                    skipped_seconds=round(self.dropped_seconds, 3),
                    by_reason=dict(tally.segments_by_reason)),
                "skipped": self.log.entries, "skipped_tally": tally}
