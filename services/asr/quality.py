"""TTS segment policy, part 2: quality flags. A segment is kept only when it has none.

Reasons (comma-joined in ``reason``): ``empty_text``, ``non_speech`` (high no-speech probability
with low confidence: Whisper's own silence rule), ``low_confidence``, ``repetition`` (compression
ratio above the threshold, or an n-gram repeated back to back: a decoder loop), ``too_short``,
``too_long``, ``text_coverage`` (text too short for its speech even after a retry: coverage.py),
``truncated`` (the segment ends where a truncated file was cut), ``hallucination`` (a stock
phrase such as "thank you for watching", a sound tag or a subtitle credit that the audio does
not say: hallucination.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from services.asr.hallucination import hallucinated
from services.asr.settings import AsrSettings

MIN_REPEATS = 4  # an n-gram said this many times in a row is a loop, not speech


def _units(text: str) -> list[str]:
    words = text.split()
    # Japanese / Chinese have no spaces: compare characters instead of words.
    if len(words) <= 2 and len(text) > 12:
        return [c for c in text if not c.isspace()]
    return [w.strip(".,!?;:\"'、。！？").lower() for w in words]


def has_repeated_ngram(text: str, max_n: int = 8, min_units: int = 8) -> bool:
    """True when some n-gram (n <= max_n) occurs MIN_REPEATS times back to back, covering at
    least ``min_units`` words (or characters for unspaced scripts)."""
    units = _units(text)
    size = len(units)
    for n in range(1, max_n + 1):
        need = max(MIN_REPEATS, -(-min_units // n))  # ceil(min_units / n), at least MIN_REPEATS
        if n * need > size:
            break
        for i in range(size - n * need + 1):
            gram = units[i:i + n]
            if all(units[i + k * n:i + (k + 1) * n] == gram for k in range(1, need)):
                return True
    return False


def is_loop(text: str, max_compression_ratio: float) -> bool:
    """A decoder loop: text far more compressible than speech, or an n-gram said over and over."""
    from faster_whisper.transcribe import get_compression_ratio

    return bool(text.strip()) and (get_compression_ratio(text) > max_compression_ratio
                                   or has_repeated_ngram(text))


def flag_segment(text: str, start: float, end: float, avg_logprob: float,
                 no_speech_prob: float, compression_ratio: float,
                 settings: AsrSettings, *, covered: bool = True, cut: bool = False,
                 word_probabilities: Sequence[float] | None = None) -> list[str]:
    """The reasons a segment is not kept (none: kept); ``word_probabilities``: its words'."""
    reasons: list[str] = []
    if not text.strip():
        reasons.append("empty_text")
    elif (no_speech_prob > settings.asr_max_no_speech_prob
          and avg_logprob < settings.asr_min_avg_logprob):
        reasons.append("non_speech")
    elif avg_logprob < settings.asr_min_avg_logprob:
        reasons.append("low_confidence")
    if text.strip() and (compression_ratio > settings.asr_max_compression_ratio
                         or has_repeated_ngram(text)):  # is_loop, with the ratio at hand
        reasons.append("repetition")
    duration = end - start
    if duration < settings.asr_segment_min_seconds:
        reasons.append("too_short")
    if duration > settings.asr_segment_max_seconds:
        reasons.append("too_long")
    if text.strip() and not covered:
        reasons.append("text_coverage")
    if cut:
        reasons.append("truncated")
    if hallucinated(text, duration, word_probabilities, avg_logprob, no_speech_prob):
        reasons.append("hallucination")
    return reasons
