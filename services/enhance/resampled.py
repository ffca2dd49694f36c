"""One batch's clips at other rates, each resampled once.

A segment's input and output are resampled to the same rates by several steps: the restored
audio to 16 kHz for the speaker-change scan and again for the annotations, the input to 8 kHz for
the overlap frames and again for the dedup signature. ``Resampled`` hands each step the result
of the first: the same call on the same array, so the same samples. Entries are keyed by the
array object itself (held, so its id cannot be reused), not by its contents: a slice of a clip
is another clip, resampled on its own. One lives for one batch (``chain.py``), so what it holds
is bounded by the batch.
"""

from __future__ import annotations

import numpy as np

from common.shards.audio import resample


class Resampled:
    def __init__(self) -> None:
        self._done: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self.hits = 0

    def __call__(self, x: np.ndarray, rate: int, to: int) -> np.ndarray:
        """``resample(x, rate, to)``, computed once per array and rates."""
        if rate == to:
            return resample(x, rate, to)
        key = (id(x), rate, to)
        got = self._done.get(key)
        if got is not None and got[0] is x:
            self.hits += 1
            return got[1]
        y = resample(x, rate, to)
        self._done[key] = (x, y)
        return y
