"""A piece's ``overlap`` from its segment's frames (``Frames.clip``) against its own frames.

The enhance writer finds a segment's overlap frames once (the edge trimming's) and scores each
piece cut from it on them, instead of running the test again on the piece. Segments here: 2-4
real lines of ``bench.wild.overlap``'s voices in a row, single voices and mixtures at 0-10 dB
below; pieces: from a random start (ms) to the segment's end or to a random end. Rows: the mean
|difference| from the piece's own score, beside how much its own score moves when the piece
starts 10 ms later (the test's 20 ms grid: the size of a difference that means nothing), the
agreement at the filter's 0.3, and whole segments: at 16 kHz input the same score to the bit;
at 48 kHz input straight to 8 kHz (the writer's path) against through 16 kHz (the annotation's
before).
"""

from __future__ import annotations

import json

import numpy as np

SEGMENTS = 60
PIECES = 4  # per segment


def piece_rows(quick: bool) -> list[dict]:
    import torch

    from bench.wild.overlap import mixtures
    from bench.wild.speakers import SR, voices
    from common.shards.audio import resample
    from services.enhance.quality.overlap import MIN_SECONDS, frames, overlap

    singles, mixed = mixtures(voices())
    clips = [c for _, c in singles] + [c for _, _, c in mixed]
    if not clips:
        return []
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    sliced, moved, agree, same16, same48 = [], [], [], 0, 0
    n = SEGMENTS // 4 if quick else SEGMENTS
    for _ in range(n):
        x = np.concatenate([clips[j] for j in rng.choice(len(clips), int(rng.integers(2, 5)))])
        seg = frames(resample(x, SR, 8000))
        same16 += seg.share() == overlap(x)
        x48 = resample(x, SR, 48000)
        same48 += frames(resample(x48, 48000, 8000)).share() == overlap(resample(x48, 48000, SR))
        length = x.size / SR
        for _ in range(PIECES):
            a = round(float(rng.uniform(0, length * 0.6)), 3)
            b = None if rng.random() < 0.3 else round(float(rng.uniform(a + 0.5, length)) * SR)
            piece, later = x[round(a * SR):b], x[round((a + 0.01) * SR):b]
            if later.size < MIN_SECONDS * SR:
                continue
            own, shifted = overlap(piece) or 0.0, overlap(later) or 0.0
            got = seg.clip(a, piece.size / SR).share()
            sliced.append(abs(got - own))
            moved.append(abs(shifted - own))
            agree.append(((got >= 0.3) == (own >= 0.3), (shifted >= 0.3) == (own >= 0.3)))
    ag = np.mean(agree, axis=0)
    row = {"baseline": None, "ratio": None}
    return [
        {**row, "name": "overlap of a piece from its segment's frames: mean |difference|",
         "ours": round(float(np.mean(sliced)), 4),
         "unit": f"{len(sliced)} pieces, same to the bit {np.mean(np.array(sliced) == 0):.2f}",
         "goal": f"<= the piece 10 ms later: {np.mean(moved):.4f} "
                 f"(same {np.mean(np.array(moved) == 0):.2f})"},
        {**row, "name": "overlap of a piece from its segment's frames: agreement at 0.3",
         "ours": round(float(ag[0]), 3), "unit": "share of pieces",
         "goal": f">= the piece 10 ms later: {ag[1]:.3f}"},
        {**row, "name": "overlap of whole segments from the trimming's frames: the same score",
         "ours": f"{same16}/{n} at 16 kHz, {same48}/{n} at 48 kHz", "unit": "segments",
         "goal": "all"},
    ]


ROWS = [piece_rows]

if __name__ == "__main__":
    for r in piece_rows(False):
        print(json.dumps(r))
