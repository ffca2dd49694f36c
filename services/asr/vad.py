"""Speech spans from Silero VAD (ships inside faster-whisper, runs on onnxruntime, no torch)."""

from __future__ import annotations

import numpy as np

from services.asr.settings import AsrSettings

SAMPLE_RATE = 16000


def speech_spans(audio: np.ndarray, settings: AsrSettings, max_span_seconds: float,
                 offset_seconds: float = 0.0) -> list[tuple[float, float]]:
    """Speech regions of ``audio`` (16 kHz mono) in seconds, offset by ``offset_seconds``.

    A region longer than ``max_span_seconds`` is split by silero at its last pause >= ~100 ms
    before the limit (a hard cut only when there is none): this is how long speech becomes
    segments that end at pauses.
    """
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    if audio.size == 0:
        return []
    opts = VadOptions(
        threshold=settings.asr_vad_threshold,
        min_silence_duration_ms=settings.asr_vad_min_silence_ms,
        max_speech_duration_s=max_span_seconds,
        speech_pad_ms=settings.asr_vad_speech_pad_ms,
        min_speech_duration_ms=250,  # clicks and blips are not speech
    )
    stamps = get_speech_timestamps(audio, opts, sampling_rate=SAMPLE_RATE)
    n = audio.size
    return [(offset_seconds + max(0, s["start"]) / SAMPLE_RATE,
             offset_seconds + min(n, s["end"]) / SAMPLE_RATE) for s in stamps]
