"""The trained detector with the pitch test beside it (docs/quality.md, overlap).

pyannote/segmentation hears a second voice at a low probability, or not at all, under some
voices (acted, reverberant, processed ones), where the pitch test still finds two periodicities
at once; where the detector misses, the pitch test is the other witness. A segment's overlap is
the detector's, or the pitch test's where that reaches ``ONSEI_QUALITY_OVERLAP_PITCH_FLOOR``
(0.5) and is the larger: each test alone at a stricter bar than the 0.3 a filter reads, so
single voices stay clear. Frame by frame (the overlap cuts and edge trimming) the detector alone
decides: the pitch test fires on a few frames of an overlap only, so its frames say where two
voices are too seldom to cut on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from services.enhance.quality import overlap

if TYPE_CHECKING:
    import numpy as np

    from services.enhance.resampled import Resampled


@dataclass(frozen=True)
class BothFrames(overlap.Frames):
    """The detector's frames, and the pitch test's (``pitch``) for the segment's score."""

    pitch: overlap.Frames | None = None
    floor: float = 0.5

    def share(self) -> float:
        own = super().share()
        if self.pitch is None:
            return own
        seen = self.pitch.share()
        return max(own, seen) if seen >= self.floor else own

    def clip(self, start: float, seconds: float) -> BothFrames:
        mine = super().clip(start, seconds)
        return BothFrames(mine.fire, mine.power, mine.loud, mine.detected,
                          None if self.pitch is None else self.pitch.clip(start, seconds),
                          self.floor)


@dataclass
class BothTest:
    """``detector``'s frames with the pitch test's beside them (``overlap.OverlapTest``)."""

    detector: overlap.OverlapTest
    floor: float = 0.5
    device: str = "cpu"

    def load(self) -> None:
        self.detector.load()

    def info(self) -> str:
        return f"{self.detector.info()}, or the pitch test at {self.floor:g} or above"

    def frames(self, x: np.ndarray, rate: int, rs: Resampled) -> BothFrames:
        f = self.detector.frames(x, rate, rs)
        pitch = overlap.PitchTest(self.device).frames(x, rate, rs)
        return BothFrames(f.fire, f.power, f.loud, f.detected, pitch, self.floor)
