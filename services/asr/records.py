"""The lines of ``asr/shard-000123.jsonl`` (docs/architecture.md, formats): one per source member.

``{"key", "language", "language_probability", "duration", "status", "segments": [{"idx", "start",
"end", "text", "avg_logprob", "no_speech_prob", "compression_ratio", "kept", "reason"}]}``;
status is ``ok``, ``dropped:<reason>`` or ``error:<reason>``.
"""

from __future__ import annotations

from typing import Any

LINE_FIELDS = ("key", "language", "language_probability", "duration", "status", "segments")
SEGMENT_FIELDS = ("idx", "start", "end", "text", "avg_logprob", "no_speech_prob",
                  "compression_ratio", "kept", "reason")


def line(key: str, status: str, *, language: str | None = None,
         language_probability: float | None = None, duration: float | None = None,
         segments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "key": key,
        "language": language,
        "language_probability": None if language_probability is None
        else round(float(language_probability), 4),
        "duration": None if duration is None else round(float(duration), 3),
        "status": status,
        "segments": segments or [],
    }


def segment(idx: int, start: float, end: float, text: str, avg_logprob: float,
            no_speech_prob: float, compression_ratio: float, reasons: list[str]) -> dict[str, Any]:
    return {
        "idx": idx,
        "start": round(start, 3),
        "end": round(end, 3),
        "text": text,
        "avg_logprob": round(avg_logprob, 4),
        "no_speech_prob": round(no_speech_prob, 4),
        "compression_ratio": round(compression_ratio, 3),
        "kept": not reasons,
        "reason": ",".join(reasons) or None,
    }
