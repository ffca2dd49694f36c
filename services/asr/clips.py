"""Plan a file into clips: contiguous stretches of speech, each one TTS segment.

VAD runs in windows of ``asr_chunk_seconds`` (bounded cost and memory whatever the file length;
a span still going on at a window's end is carried into the next window, not cut). Speech spans
(already split by VAD at pauses so none exceeds the max) are joined across pauses up to
``asr_merge_gap_seconds`` while the clip stays within the max (``asr_segment_max_seconds``, at most
one 30 s window). A clip becomes one TTS segment with the words spoken in it: its speech is
decoded in windows packed across clips (windows.py), each word given to the clip it was
aligned in. The pauses inside a clip are kept: a clip whose text comes out short is re-decoded
alone, in parts split there (stage.py).

Language ID needs only the head of a file (:func:`head_spans`): the rest is VAD-ed only when
the file is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from services.asr.settings import AsrSettings
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

    def parts(self) -> list[Clip]:
        """The clip's speech spans between its pauses, each a clip of its own."""
        bounds = [self.start] + [t for p in self.pauses for t in p] + [self.end]
        return [Clip(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)]


def max_clip_seconds(settings: AsrSettings) -> float:
    return min(settings.asr_segment_max_seconds, WHISPER_WINDOW_SECONDS)


def vad_range(audio: np.ndarray, settings: AsrSettings, pos: int, stop: int
              ) -> tuple[list[tuple[float, float]], int]:
    """Speech spans of ``audio[pos:stop]`` in file seconds, and where VAD must resume: ``stop``,
    or the start of a span still going on at ``stop`` (carried over, not cut)."""
    n = audio.size
    spans = speech_spans(audio[pos:stop], settings, max_clip_seconds(settings),
                         offset_seconds=pos / SAMPLE_RATE)
    if stop < n and len(spans) > 1 and spans[-1][1] >= stop / SAMPLE_RATE - EDGE_SECONDS:
        return spans[:-1], int(spans[-1][0] * SAMPLE_RATE)
    return spans, stop


def file_spans(audio: np.ndarray, settings: AsrSettings, pos: int = 0) -> list[tuple[float, float]]:
    """VAD speech spans from sample ``pos`` to the end of the file, in seconds, windowed."""
    max_span = max_clip_seconds(settings)
    chunk = max(int(settings.asr_chunk_seconds * SAMPLE_RATE), int(4 * max_span * SAMPLE_RATE))
    out: list[tuple[float, float]] = []
    while pos < audio.size:
        spans, nxt = vad_range(audio, settings, pos, min(audio.size, pos + chunk))
        out.extend(spans)
        pos = max(nxt, pos + 1)
    return out


def head_spans(audio: np.ndarray, settings: AsrSettings) -> tuple[list[tuple[float, float]], int]:
    """Spans of the first ``asr_lid_head_seconds`` (language ID looks there) and the resume
    point."""
    max_span = max_clip_seconds(settings)
    head = int(max(settings.asr_lid_head_seconds, 2 * max_span) * SAMPLE_RATE)
    return vad_range(audio, settings, 0, min(audio.size, head))


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


def plan_clips(spans: list[tuple[float, float]], settings: AsrSettings) -> list[Clip]:
    return join_spans(spans, max_clip_seconds(settings), settings.asr_merge_gap_seconds)
