"""Fixed-size streaming: split segments into chunks with context, join the outputs seamlessly.

A segment of ``L`` input samples is tiled by *cores* of ``chunk`` samples (the last, the *tail*,
is shorter). Each core is fed to the model inside a *window* that adds ``context`` samples of the
real surrounding audio on each side, so the model never sees a hard edge next to audio we keep.
From each output window only the core (plus half a crossfade into the context on inner seams)
is kept; neighbouring cores are crossfaded with raised-cosine ramps that sum to one, which hides
the small level/phase differences a model produces between independently processed chunks.

Everything is in input samples except where noted (``ratio`` = output rate / input rate).
Window lengths and row offsets are multiples of ``hop`` (one model frame) so output frames
line up with input samples exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ChunkGeometry:
    chunk: int  # core samples of a full chunk
    context: int  # context samples on each side of a core
    hop: int  # model frame, input samples (alignment unit)
    crossfade: int  # samples over which inner seams are crossfaded (<= 2 * context)

    @property
    def window(self) -> int:
        """Row length of the model input: one full chunk with its context."""
        return self.chunk + 2 * self.context

    @property
    def margin(self) -> int:
        """Audio needed beyond each segment end to fill contexts and alignment padding."""
        return self.context + self.hop

    @classmethod
    def from_seconds(cls, rate: int, chunk_s: float, context_s: float, crossfade_s: float,
                     hop: int) -> ChunkGeometry:
        def align(n: float) -> int:
            return max(hop, round(n / hop) * hop)

        context = align(context_s * rate) if context_s > 0 else 0
        chunk = align(chunk_s * rate)
        xf = round(crossfade_s * rate) // 2 * 2
        return cls(chunk=chunk, context=context, hop=hop, crossfade=min(xf, 2 * context))


@dataclass(eq=False)
class Item:
    """One chunk of one segment: a core and the window around it that the model sees."""

    seg: int  # serial of the segment within the shard
    index: int  # chunk index within the segment
    core_start: int  # segment coordinates, input samples
    core_len: int
    left: int  # context before the core inside the window
    length: int  # window length (multiple of hop)
    audio: np.ndarray | None = field(default=None, repr=False)
    deferrals: int = 0  # times left out of a batch (packed first next round)


def split_segment(seg: int, seg_len: int, geom: ChunkGeometry,
                  padded: np.ndarray | None = None) -> list[Item]:
    """Cut one segment into items. ``padded`` = the segment with ``geom.margin`` samples of
    surrounding audio (or zeros) on each side; ``None`` plans sizes only (bench, tests)."""
    items: list[Item] = []
    n = max(1, math.ceil(seg_len / geom.chunk))
    m = geom.margin
    for k in range(n):
        start = k * geom.chunk
        core = min(geom.chunk, seg_len - start)
        raw = geom.context + core + geom.context
        length = -(-raw // geom.hop) * geom.hop  # right context grows to the next frame
        audio = None
        if padded is not None:
            a = m + start - geom.context
            audio = padded[a:a + length]
            if audio.size < length:  # only when the caller gave less margin than asked
                audio = np.pad(audio, (0, length - audio.size))
        items.append(Item(seg, k, start, core, geom.context, length, audio))
    return items


def pad_segment(audio: np.ndarray, start: int, end: int, margin: int) -> np.ndarray:
    """``audio[start - margin : end + margin]`` of a whole file, zeros outside the file."""
    lo, hi = start - margin, end + margin
    out = np.zeros(hi - lo, dtype=np.float32)
    a, b = max(lo, 0), min(hi, audio.size)
    if b > a:
        out[a - lo:b - lo] = audio[a:b]
    return out


def _ramp(n: int) -> np.ndarray:
    """Raised-cosine fade-in of ``n`` samples; fade_in + fade_in[::-1] == 1 pointwise."""
    t = (np.arange(n, dtype=np.float64) + 0.5) / n
    return (0.5 - 0.5 * np.cos(np.pi * t)).astype(np.float32)


class SegmentAssembler:
    """Collects the outputs of a segment's items (any order) and yields the joined audio."""

    def __init__(self, seg_len: int, n_items: int, ratio: int, geom: ChunkGeometry) -> None:
        self.ratio = ratio
        self.geom = geom
        self.seg_len = seg_len
        # allocated when the first chunk returns, not when the segment is cut: a segment waits
        # in the packing pool for up to a round before any of its chunks runs
        self._out: np.ndarray | None = None
        self.remaining = n_items

    @property
    def out(self) -> np.ndarray:
        if self._out is None:
            self._out = np.zeros(self.seg_len * self.ratio, dtype=np.float32)
        return self._out

    def add(self, item: Item, window_out: np.ndarray) -> None:
        """``window_out``: the model output for the item's whole window (output rate)."""
        r = self.ratio
        h = self.geom.crossfade // 2
        core_a, core_b = item.core_start, item.core_start + item.core_len
        lh = h if core_a > 0 else 0  # crossfade only on inner seams
        rh = h if core_b < self.seg_len else 0
        a, b = max(0, core_a - lh), min(self.seg_len, core_b + rh)
        w0 = item.left - (core_a - a)  # window offset of segment sample a
        piece = window_out[w0 * r:(w0 + b - a) * r].astype(np.float32, copy=True)
        if piece.size < (b - a) * r:  # a model that returns a little short: zeros
            piece = np.pad(piece, (0, (b - a) * r - piece.size))
        if lh:  # ramp up across [core_a - h, core_a + h)
            n = 2 * lh * r
            s = (core_a - lh - a) * r
            piece[s:s + n] *= _ramp(n)[: max(0, min(n, piece.size - s))]
        if rh:  # ramp down across [core_b - h, core_b + h)
            n = 2 * rh * r
            s = (core_b - rh - a) * r
            e = min(piece.size, s + n)
            piece[s:e] *= _ramp(n)[::-1][: e - s]
        self.out[a * r:b * r] += piece
        self.remaining -= 1

    @property
    def done(self) -> bool:
        return self.remaining <= 0
