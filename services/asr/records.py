"""How asr writes its lines (``services.records.AsrLine``/``AsrSegment``, docs/architecture.md,
formats): the values rounded as the format has them (times to the ms, scores to 1e-4)."""

from __future__ import annotations

from typing import TypedDict

from services.records import AsrLine, AsrSegment, LineStatus, Word, line_status, written_keys

# the keys every line and segment has, in order (a line may add ``notes``)
LINE_FIELDS = written_keys(AsrLine)
SEGMENT_FIELDS = written_keys(AsrSegment)


class LineFields(TypedDict, total=False):
    """The keywords of :func:`line` a file's language ID and length fill in, gathered before
    the line is written (``langid.main_language`` gives the first two)."""

    language: str | None
    language_probability: float | None
    duration: float | None


def line(key: str, kind: LineStatus, reason: str = "", *, language: str | None = None,
         language_probability: float | None = None, duration: float | None = None,
         segments: list[AsrSegment] | None = None) -> AsrLine:
    """``kind`` and ``reason`` are written as the line's ``status`` (``dropped:language``)."""
    return AsrLine(
        key=key,
        language=language,
        language_probability=None if language_probability is None
        else round(float(language_probability), 4),
        duration=None if duration is None else round(float(duration), 3),
        status=line_status(kind, reason),
        segments=segments or [],
    )


def segment(idx: int, start: float, end: float, text: str, avg_logprob: float,
            no_speech_prob: float, compression_ratio: float, reasons: list[str],
            words: list[Word] | None = None, language: str | None = None) -> AsrSegment:
    return AsrSegment(
        idx=idx,
        start=round(start, 3),
        end=round(end, 3),
        text=text,
        avg_logprob=round(avg_logprob, 4),
        no_speech_prob=round(no_speech_prob, 4),
        compression_ratio=round(compression_ratio, 3),
        kept=not reasons,
        reason=",".join(reasons) or None,
        words=words,
        min_word_probability=min((w.probability for w in words), default=None) if words else None,
        language=language,
    )
