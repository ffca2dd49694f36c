"""Plan a file into transcription clips: contiguous stretches of speech, each <= one Whisper window.

VAD runs in windows of ``asr_chunk_seconds`` (bounded cost and memory whatever the file length;
a span still going on at a window's end is carried into the next window, not cut). Speech spans
(already split by VAD at pauses so none exceeds the max) are joined across pauses up to
``asr_merge_gap_seconds`` while the clip stays within the max: one encoder pass then covers up
to 30 s of speech instead of 30 s of padding per phrase. The pauses inside a clip are kept: they
are where TTS segments may be cut (split.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from common.settings import Settings
from services.asr.vad import SAMPLE_RATE, speech_spans

WHISPER_WINDOW_SECONDS = 30.0  # one encoder window: audio beyond it would be dropped
EDGE_SECONDS = 0.25  # a span ending this close to a VAD window's end is still going on


@dataclass
class Clip:
    start: float
    end: float
    pauses: list[tuple[float, float]] = field(default_factory=list)  # VAD gaps inside the clip

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def speech_seconds(self) -> float:
        return self.duration - sum(e - s for s, e in self.pauses)


def max_clip_seconds(settings: Settings) -> float:
    return min(settings.segment_max_seconds, WHISPER_WINDOW_SECONDS)


def file_spans(audio: np.ndarray, settings: Settings) -> list[tuple[float, float]]:
    """VAD speech spans over the whole file, in seconds, windowed."""
    max_span = max_clip_seconds(settings)
    chunk = max(int(settings.asr_chunk_seconds * SAMPLE_RATE), int(4 * max_span * SAMPLE_RATE))
    n = audio.size
    pos = 0
    out: list[tuple[float, float]] = []
    while pos < n:
        end = min(n, pos + chunk)
        spans = speech_spans(audio[pos:end], settings, max_span, offset_seconds=pos / SAMPLE_RATE)
        nxt = end
        if end < n and len(spans) > 1 and spans[-1][1] >= end / SAMPLE_RATE - EDGE_SECONDS:
            nxt = int(spans[-1][0] * SAMPLE_RATE)  # carry the unfinished span over
            spans = spans[:-1]
        out.extend(spans)
        pos = max(nxt, pos + 1)
    return out


def join_spans(spans: list[tuple[float, float]], max_seconds: float, join_gap: float) -> list[Clip]:
    clips: list[Clip] = []
    for start, end in sorted(spans):
        if clips:
            c = clips[-1]
            if start - c.end <= join_gap and end - c.start <= max_seconds:
                if start > c.end:
                    c.pauses.append((c.end, start))
                c.end = max(c.end, end)
                continue
        clips.append(Clip(start, end))
    return clips


def plan_clips(audio: np.ndarray, settings: Settings) -> list[Clip]:
    return join_spans(file_spans(audio, settings), max_clip_seconds(settings),
                      settings.asr_merge_gap_seconds)


SEPARATOR_SECONDS = 1.0  # silence put between clips packed into one window: a phrase boundary


@dataclass
class Window:
    """Clips packed (in time order) into one encoder window, separated by silence."""

    clips: list[Clip]
    indices: list[int]  # the clips' indices in the file's clip list

    @property
    def offsets(self) -> list[float]:
        """Where each clip starts inside the window."""
        out, t = [], 0.0
        for c in self.clips:
            out.append(t)
            t += c.duration + SEPARATOR_SECONDS
        return out

    @property
    def speech_seconds(self) -> float:
        return sum(c.speech_seconds for c in self.clips)

    def audio(self, audio: np.ndarray) -> np.ndarray:
        gap = np.zeros(int(SEPARATOR_SECONDS * SAMPLE_RATE), dtype=np.float32)
        parts: list[np.ndarray] = []
        for i, c in enumerate(self.clips):
            if i:
                parts.append(gap)
            parts.append(audio[int(c.start * SAMPLE_RATE):int(c.end * SAMPLE_RATE)])
        return np.concatenate(parts)

    def to_file_time(self, t: float) -> tuple[int, float]:
        """(position of the clip within the window, file time) of window time ``t``."""
        offsets = self.offsets
        k = 0
        for j, off in enumerate(offsets):
            if t >= off - SEPARATOR_SECONDS / 2:
                k = j
        c = self.clips[k]
        return k, min(c.end, max(c.start, c.start + t - offsets[k]))


def pack_windows(clips: list[Clip], max_seconds: float = WHISPER_WINDOW_SECONDS) -> list[Window]:
    """Greedy, in time order: short clips share an encoder pass instead of each padding to 30 s."""
    windows: list[Window] = []
    length = 0.0
    for i, c in enumerate(clips):
        if windows and length + SEPARATOR_SECONDS + c.duration <= max_seconds:
            windows[-1].clips.append(c)
            windows[-1].indices.append(i)
            length += SEPARATOR_SECONDS + c.duration
        else:
            windows.append(Window([c], [i]))
            length = c.duration
    return windows
