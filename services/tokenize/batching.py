"""Length bucketing: group a window of segments into batches of similar length.

Sorted longest first, a batch takes the next segment while the batch stays within its audio
budget, its item limit, and its padding waste (padded frames / all frames of the batch) within
``max_waste``. Every batch is within the bound, so the whole window is too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BatchPlan:
    batches: list[list[int]]  # indices into the window, each batch longest first
    frames: int  # real frames
    padded_frames: int  # frames the batches compute, padding included

    @property
    def waste(self) -> float:
        return 0.0 if self.padded_frames == 0 else 1.0 - self.frames / self.padded_frames


def plan_batches(lengths: list[int], max_frames: int, max_items: int = 64,
                 max_waste: float = 0.03) -> BatchPlan:
    """``lengths``: frames per segment; ``max_frames``: frames per batch incl. padding."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    real = padded = 0
    cur: list[int] = []
    cur_sum = 0
    for i in order:
        n = max(1, lengths[i])
        if cur:
            longest = max(1, lengths[cur[0]])
            size = len(cur) + 1
            waste = 1.0 - (cur_sum + n) / (size * longest)
            if size <= max_items and size * longest <= max_frames and waste <= max_waste:
                cur.append(i)
                cur_sum += n
                continue
            batches.append(cur)
            real += cur_sum
            padded += len(cur) * longest
        cur, cur_sum = [i], n
    if cur:
        batches.append(cur)
        real += cur_sum
        padded += len(cur) * max(1, lengths[cur[0]])
    return BatchPlan(batches, real, padded)
