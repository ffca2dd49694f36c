"""Language ID from several windows spread over a file's head, not only its first 30 s.

Up to ``lid_windows`` encoder windows (windows.py) are picked evenly over the windows of the
first ``lid_head_seconds``: a file in another language costs VAD of its head and
these encoder passes, never VAD or decoding of the whole file. Their encoder output is reused
for their transcription (batched.py), so language ID costs no extra encoder pass for a kept
file. Whisper's language distributions are averaged, weighted by the speech seconds of each window.

A first look encodes one of them (the middle one): a window at least
``lid_first_look_probability`` sure to be in no kept language (the probabilities of all the
languages not kept, summed) drops the file after one encoder pass, as the batched peer's
language ID costs. Summed, because Whisper unsure between two languages not kept (German 0.35,
Welsh 0.14, Latvian 0.09, ... and English 0.05) is still sure the file is not English. Anything
else (a kept language, or a close call between a kept language and another) encodes the others
too and decides on all of them, so a mixed-language head is still judged on every window; for
a kept file this costs nothing, their encoder output serving their transcription.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LanguageGuess:
    language: str | None
    probability: float
    windows: int
    shares: dict[str, float] = field(default_factory=dict)  # every language's probability


def pick_windows(n: int, k: int) -> list[int]:
    """``k`` window indices spread evenly over ``n`` (all of them when there are few)."""
    if n <= k:
        return list(range(n))
    return sorted({min(n - 1, int((i + 0.5) * n / k)) for i in range(k)})


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
    return LanguageGuess(language, score / total_weight, len(distributions),
                         {k: v / total_weight for k, v in totals.items()})


def first_look(picked: list[int]) -> list[int]:
    """The window of the first look: the middle one of those picked (the head's body, not its
    opening words, which are the likeliest to be in another language: a title, a greeting)."""
    return [picked[len(picked) // 2]] if picked else []


def settled(guess: LanguageGuess, kept: list[str], probability: float) -> bool:
    """Whether one look decides: at least ``probability`` sure that the speech is in none of
    the ``kept`` languages (``probability`` > 1: never, every file gets every window)."""
    if guess.language is None:
        return False
    return 1.0 - sum(guess.shares.get(k, 0.0) for k in kept) >= probability
