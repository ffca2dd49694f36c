"""Language ID from several clips spread over a file's head, not only its first 30 s.

Up to ``lid_windows`` clips (one encoder window each, clips.py) are picked evenly over the
clips of the first ``lid_head_seconds``: a file in another language costs VAD of its head and
these encoder passes, never VAD or decoding of the whole file. Their encoder output is reused
for their transcription (batched.py), so language ID costs no extra encoder pass for a kept
file. Whisper's language distributions are averaged, weighted by the speech seconds of each clip.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LanguageGuess:
    language: str | None
    probability: float
    windows: int


def pick_clips(n_clips: int, k: int) -> list[int]:
    """``k`` clip indices spread evenly over ``n_clips`` (all of them when there are few)."""
    if n_clips <= k:
        return list(range(n_clips))
    return sorted({min(n_clips - 1, int((i + 0.5) * n_clips / k)) for i in range(k)})


def aggregate(distributions: list[list[tuple[str, float]]], weights: list[float]) -> LanguageGuess:
    """Weighted mean of per-window ``[(token or code, prob), ...]``; tokens like ``<|en|>``."""
    if not distributions:
        return LanguageGuess(None, 0.0, 0)
    totals: dict[str, float] = {}
    for weight, pairs in zip(weights, distributions):
        for token, prob in pairs:
            lang = token[2:-2] if token.startswith("<|") else token
            totals[lang] = totals.get(lang, 0.0) + weight * prob
    total_weight = sum(weights) or 1.0
    language, score = max(totals.items(), key=lambda kv: kv[1])
    return LanguageGuess(language, score / total_weight, len(distributions))
