"""Encoder windows: a file's speech packed into Whisper's 30 s windows, apart from its clips.

A clip (clips.py) is one TTS segment: speech joined across pauses up to the segment max, its
pauses at full length. A window is what Whisper hears: speech spans in file order with the
pauses between them capped at ``MAX_PAUSE_SECONDS`` (long silences inside a window cost
Whisper words), up to 30 s. One clip per window left 2-10 s of every window empty (a 30 s
clip with its pauses is 20-28 s of window), one encoder row in seven on long-form speech;
spans are therefore packed into full windows in file order, as the batched peer packs its
VAD chunks, and a clip's speech may lie in two windows (docs/asr.md).

Each window is decoded once, with word alignment; a word belongs to the clip whose speech it
was aligned in (the span nearest its middle). Clips meet only at VAD pauses (half a second or
more, :data:`MAX_PAUSE_SECONDS` of it in the window) and no window is cut inside a span, so no
word is cut and none straddles two clips.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from services.asr.batched import ClipText
from services.asr.clips import WHISPER_WINDOW_SECONDS, Clip
from services.asr.vad import SAMPLE_RATE
from services.asr.words import WordTime, WordTimes, loud_frames, run_on, snapped

N_FRAMES = 3000  # mel frames in Whisper's 30 s window
MAX_PAUSE_SECONDS = 0.8  # longer pauses inside a window are shortened to this

Span = tuple[float, float]  # file seconds
Unit = tuple[Span, int]  # a speech span and the index of its clip


def pieces(spans: list[Span]) -> list[tuple[int, int]]:
    """The file's sample ranges that make up a window of ``spans`` (in order): the spans with
    each pause between them capped at ``MAX_PAUSE_SECONDS``, its own edges kept (the pause's
    background, not digital silence), its middle left out."""
    half = int(MAX_PAUSE_SECONDS * SAMPLE_RATE) // 2
    out: list[tuple[int, int]] = []
    prev_end: int | None = None
    for start, end in spans:
        a, b = int(start * SAMPLE_RATE), int(end * SAMPLE_RATE)
        if prev_end is not None and a > prev_end:
            out.append((prev_end, min(a, prev_end + half)))
            out.append((max(prev_end + half, a - half), a))
        out.append((a, b))
        prev_end = b
    return out


def file_time(window: list[tuple[int, int]], t: float) -> float:
    """A time in seconds of a window (its :func:`pieces`), in seconds of the file."""
    pos = max(0.0, t) * SAMPLE_RATE
    for a, b in window:
        if pos <= b - a:
            return (a + pos) / SAMPLE_RATE
        pos -= b - a
    return window[-1][1] / SAMPLE_RATE


def _gap(prev: Span | None, span: Span) -> float:
    return 0.0 if prev is None else min(max(0.0, span[0] - prev[1]), MAX_PAUSE_SECONDS)


@dataclass
class Window:
    units: list[Unit] = field(default_factory=list)  # in file order

    @property
    def spans(self) -> list[Span]:
        return [s for s, _ in self.units]

    def pieces(self) -> list[tuple[int, int]]:
        return pieces(self.spans)

    def audio(self, audio: np.ndarray) -> np.ndarray:
        return np.concatenate([audio[a:b] for a, b in self.pieces()])

    def frames(self, hop: int) -> int:
        """Its length in mel frames (what word alignment looks at)."""
        return min(N_FRAMES, max(1, -(-sum(b - a for a, b in self.pieces()) // hop)))

    @property
    def seconds(self) -> float:
        prev: Span | None = None
        total = 0.0
        for s in self.spans:
            total += _gap(prev, s) + s[1] - s[0]
            prev = s
        return total

    @property
    def speech_seconds(self) -> float:
        return sum(b - a for a, b in self.spans)

    def bounds(self) -> list[tuple[float, float]]:
        """Each unit's start and end in seconds of the window (its pauses shortened)."""
        out: list[tuple[float, float]] = []
        t, prev = 0.0, None
        for span, _ in self.units:
            t += _gap(prev, span)
            out.append((t, t + span[1] - span[0]))
            t, prev = out[-1][1], span
        return out


def units_of(clips: list[Clip]) -> list[Unit]:
    """Every clip's speech spans (its parts between pauses), tagged with the clip, in order."""
    return [((p.start, p.end), i) for i, c in enumerate(clips) for p in c.parts()]


def pack(units: list[Unit], max_seconds: float = WHISPER_WINDOW_SECONDS) -> list[Window]:
    """``units`` in order, packed greedily into windows of at most ``max_seconds``."""
    out: list[Window] = []
    length = 0.0
    for unit in units:
        span = unit[0]
        if out and out[-1].units:
            add = _gap(out[-1].units[-1][0], span) + span[1] - span[0]
            if length + add <= max_seconds:
                out[-1].units.append(unit)
                length += add
                continue
        out.append(Window([unit]))
        length = span[1] - span[0]
    return out


def alone(clips: list[Clip]) -> list[Window]:
    """One window per clip (a clip decoded by itself, as a coverage retry does)."""
    return [Window([((p.start, p.end), i) for p in c.parts()]) for i, c in enumerate(clips)]


def _placed(w: Window, words: WordTimes, audio: np.ndarray | None) -> list[tuple[int, WordTime]]:
    """A window's words (window seconds) as (clip, word in file seconds). Whisper's alignment
    has no gaps, so a word after a pause starts inside it: words are snapped to the window's
    loud frames (words.snapped) before they are given to the span nearest their middle; where
    two clips meet, the first one's last word ran on until the next word started, so it is
    given to its span's end and the next one its span's start, and both snapped again."""
    bounds = w.bounds()
    loud = loud_frames(w.audio(audio)) if audio is not None else None
    if loud is not None:
        words = snapped(words, loud, 0.0)
    near = [min(range(len(bounds)), key=lambda k: max(bounds[k][0] - (a + b) / 2,
                                                       (a + b) / 2 - bounds[k][1], 0.0))
            for _, a, b, _ in words]
    if loud is not None:  # ends the full stop and the end token took (words.run_on)
        words = run_on(words, loud, [bounds[u][1] for u in near])
    edges = []
    for k in range(len(words) - 1):
        if w.units[near[k]][1] != w.units[near[k + 1]][1]:
            word, a, b, p = words[k]
            words[k] = (word, a, max(b, bounds[near[k]][1]), p)
            word, a, b, p = words[k + 1]
            words[k + 1] = (word, min(a, bounds[near[k + 1]][0]), b, p)
            edges += [k, k + 1]
    if loud is not None and edges:
        for k, moved in zip(edges, snapped([words[k] for k in edges], loud, 0.0)):
            words[k] = moved
    window = w.pieces()
    return [(w.units[u][1], (word, file_time(window, a), file_time(window, b), p))
            for u, (word, a, b, p) in zip(near, words)]


def split(clips: list[Clip], windows: list[Window], texts: list[ClipText],
          audio: np.ndarray | None = None, keep_words: bool = True) -> list[ClipText]:
    """One text per clip from one per window: each window's words, snapped to its speech with
    ``audio`` (16 kHz, the file) given, in file seconds, given to the clip they were spoken in
    (:func:`_placed`), in time order. A window with text but no words (no alignment) gives its
    text to the clip with the most speech in it, as one word over the window's speech with
    probability 0 (not aligned). ``keep_words`` False: texts only."""
    got: list[WordTimes] = [[] for _ in clips]
    scores: list[list[tuple[int, float, float]]] = [[] for _ in clips]  # (words, logp, nsp)
    for w, t in zip(windows, texts):
        counts: dict[int, int] = {}
        if t.words:
            for i, word in _placed(w, list(t.words), audio):
                got[i].append(word)
                counts[i] = counts.get(i, 0) + 1
        elif t.text:
            share: dict[int, float] = {}
            for (a, b), i in w.units:
                share[i] = share.get(i, 0.0) + b - a
            best = max(share, key=lambda i: share[i])
            got[best].append((" " + t.text, w.spans[0][0], w.spans[-1][1], 0.0))
            counts[best] = 1
        for i in dict.fromkeys(i for _, i in w.units):
            scores[i].append((counts.get(i, 0), t.avg_logprob, t.no_speech_prob))
    out = []
    for words, sc in zip(got, scores):
        words.sort(key=lambda x: x[1])
        n = sum(k for k, _, _ in sc)
        logp = sum(k * lp for k, lp, _ in sc) / n if n else sc[0][1]
        nsp = max(sc, key=lambda x: x[0])[2]
        out.append(ClipText("".join(x[0] for x in words).strip(), logp, nsp,
                            words if keep_words else None))
    return out
