"""Language ID from several windows spread over a file's head, not only its first 30 s.

Up to ``asr_lid_windows`` encoder windows (windows.py) are picked evenly over the windows of the
first ``asr_lid_head_seconds``: a file in another language costs VAD of its head and
these encoder passes, never VAD or decoding of the whole file. Their encoder output is reused
for their transcription (batched.py), so language ID costs no extra encoder pass for a kept
file. Whisper's language distributions are averaged, weighted by the speech seconds of each window.

A first look (off by default, ``asr_lid_first_look_probability`` above 1: a file is dropped only
when none of the windows looked at is in a kept language) encodes one of them (the middle one):
a window at least ``asr_lid_first_look_probability`` sure to be in no kept language (the
probabilities of all the languages not kept, summed) drops the file after one encoder pass, as
the batched peer's language ID costs. Summed, because Whisper unsure between two languages not
kept (German 0.35, Welsh 0.14, Latvian 0.09, ... and English 0.05) is still sure the file is
not English. Anything else (a kept language, or a close call between a kept language and
another) encodes the others too and decides on all of them, so a mixed-language head is still
judged on every window; for a kept file this costs nothing, their encoder output serving their
transcription.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.asr.clips import Clip
    from services.asr.records import LineFields


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
            totals[code(token)] = totals.get(code(token), 0.0) + weight * prob
    total_weight = sum(weights) or 1.0
    language, score = max(totals.items(), key=lambda kv: kv[1])
    return LanguageGuess(language, score / total_weight, len(distributions),
                         {k: v / total_weight for k, v in totals.items()})


def first_look(picked: list[int]) -> list[int]:
    """The window of the first look: the middle one of those picked (the head's body, not its
    opening words, which are the likeliest to be in another language: a title, a greeting)."""
    return [picked[len(picked) // 2]] if picked else []


def kept_language(guess: LanguageGuess, dists: list[list[tuple[str, float]]], kept: list[str],
                  threshold: float) -> str | None:
    """The kept language that keeps the file, None when none does: the head's (the weighted
    mean of its windows) when it is kept, else one that a single window is sure of (a head that
    switches languages: an English prompt in a German show, a Japanese reply)."""
    if guess.language in kept and guess.probability >= threshold:
        return guess.language
    for dist in dists:
        best, p = max(dist, key=lambda x: x[1])
        if code(best) in kept and p >= threshold:
            return code(best)
    return None


def settled(guess: LanguageGuess, kept: list[str], probability: float) -> bool:
    """Whether one look decides: at least ``probability`` sure that the speech is in none of
    the ``kept`` languages (``probability`` > 1: never, every file gets every window)."""
    if guess.language is None:
        return False
    return 1.0 - sum(guess.shares.get(k, 0.0) for k in kept) >= probability


# --- the language of each window, and of each span where a window holds a switch ----------------
SLICES = 3  # a window's encoder output in thirds: ~10 s each, long enough for a sure answer
SURE = 0.5  # slices each this sure of a different language: the window holds a switch
OTHER_SURE = 0.7  # or this sure, summed, of languages not kept (as the first look decides)
SWITCH_PENALTY = 2.0  # nats of evidence a switch between two spans must be worth
SLICED_ROWS = 750  # a window with less speech (15 s of encoder rows) is looked at whole, padding
# included, as Whisper looks at any window: thirds of a 3 s clip are 1 s each, and Whisper on
# 1 s of English said Hungarian
SURE_SECONDS = 2.0  # a span this long counts in full; a shorter one less (Whisper on one 3 s
# English span alone said Maori, Hungarian, Hawaiian: short spans are unsure)

Distribution = list[tuple[str, float]]  # [(token like <|en|>, or code, probability), ...]


def code(token: str) -> str:
    return token[2:-2] if token.startswith("<|") else token


def slices(frames: int, n: int = SLICES, total: int | None = None) -> list[tuple[int, int]]:
    """``n`` equal ranges of encoder rows over a window's ``frames`` rows of audio; a window
    of under :data:`SLICED_ROWS` rows is one range, its ``total`` rows (padding included).
    With ``total``, the last range runs on to it: Whisper hears the end of a window's audio
    followed by its padding, and the last third of a file's last (shorter) window cut off
    before its padding was read as another language (English as Hawaiian, Thai, Latin at
    0.31-0.37), so the window was looked at again span by span, an encoder pass each, in
    monolingual English files (docs/asr.md)."""
    if total is not None and frames < SLICED_ROWS:
        return [(0, total)]
    step = max(1, frames // n)
    out = [(k * step, (k + 1) * step) for k in range(n)]
    if total is not None:
        out[-1] = (out[-1][0], max(out[-1][1], total))
    return out


def _named(probs: dict[str, float], kept: list[str], sure: float) -> str | None:
    """The language ``probs`` is sure of: its top one at ``sure``, or, when the languages not
    kept have :data:`OTHER_SURE` summed (Whisper base on German: German 0.35, Welsh 0.14,
    ...), the likeliest of those; None when unsure."""
    best = max(probs, key=lambda k: probs[k])
    if probs[best] >= sure:
        return best
    if 1.0 - sum(probs.get(k, 0.0) for k in kept) >= OTHER_SURE:
        return max((k for k in probs if k not in kept), key=lambda k: probs[k])
    return None


def window_language(dists: list[Distribution], kept: list[str]) -> tuple[str, list[str]]:
    """From a window's slices: its language (of their mean: one not kept when they are
    :data:`OTHER_SURE` of those summed, else the likelier kept one), and the languages some
    slice is sure of (two or more: the window holds a switch between them)."""
    totals: dict[str, float] = {}
    sure: list[str] = []
    for dist in dists:
        probs = {code(t): p for t, p in dist}
        for lang, prob in probs.items():
            totals[lang] = totals.get(lang, 0.0) + prob / len(dists)
        named = _named(probs, kept, SURE)
        if named is not None and named not in sure:
            sure.append(named)
    others = [k for k in totals if k not in kept]
    if 1.0 - sum(totals.get(k, 0.0) for k in kept) >= OTHER_SURE or not others:
        return max(others or totals, key=lambda k: totals[k]), sure
    # unsure: the likelier kept language (a kept one is decoded, so no speech is lost)
    return max(kept, key=lambda k: totals.get(k, 0.0)), sure


def unit_languages(dists: list[Distribution], candidates: list[str],
                   seconds: list[float]) -> list[str]:
    """Each span's language among ``candidates`` (those its window's slices were sure of, or
    its and its neighbour's): the likeliest sequence, a switch costing
    :data:`SWITCH_PENALTY` (short spans are unsure, and one unsure span must not make a
    switch; a span weighs its seconds, up to :data:`SURE_SECONDS`)."""
    scores: list[list[float]] = []
    for dist, secs in zip(dists, seconds):
        probs = {code(t): p for t, p in dist}
        total = sum(probs.get(c, 0.0) for c in candidates) or 1.0
        weight = min(1.0, secs / SURE_SECONDS)
        scores.append([weight * math.log(max(probs.get(c, 0.0) / total, 1e-4))
                       for c in candidates])
    if not scores:
        return []
    best = list(scores[0])
    back: list[list[int]] = []
    for em in scores[1:]:
        prev = best
        step, best = [], []
        for c in range(len(candidates)):
            k = max(range(len(candidates)),
                    key=lambda j: prev[j] - (SWITCH_PENALTY if j != c else 0.0))
            step.append(k)
            best.append(prev[k] - (SWITCH_PENALTY if k != c else 0.0) + em[c])
        back.append(step)
    state = max(range(len(candidates)), key=lambda j: best[j])
    path = [state]
    for step in reversed(back):
        state = step[state]
        path.append(state)
    return [candidates[j] for j in reversed(path)]


def main_language(clips: list[Clip], languages: list[str | None], kept: list[str],
                  guess: LanguageGuess) -> LineFields:
    """A file's line ``language`` (and the head's probability of it): the one most of its speech
    is in, a kept one when any of it is; each segment carries its own."""
    seconds: dict[str, float] = {}
    for clip, lang in zip(clips, languages):
        if lang is not None:
            seconds[lang] = seconds.get(lang, 0.0) + clip.speech_seconds
    if not seconds:
        return {}
    best = max(seconds, key=lambda k: (k in kept, seconds[k]))
    return {"language": best, "language_probability": guess.shares.get(best, guess.probability)
            if best != guess.language else guess.probability}
