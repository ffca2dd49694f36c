"""Text coverage: a segment's text must be long enough for the speech it holds.

A TTS segment whose audio holds two sentences but whose text holds one teaches a model to
mumble. Whatever the cause (a decoder that stops early, a missed sentence), the check is the
same: the file's own text rate (letters and digits per second of VAD speech, for Japanese the
morae of its reading; the median over its clips of some length, never below a per-language
floor) sets what a clip should carry. A clip whose words leave ``UNCOVERED_SECONDS`` of its
speech (VAD) with no word near it has those stretches decoded alone (a run of them with only
pauses between, as one clip), however much text it has, and their words put in among the
others: Whisper ends a window's text early now and then and drops the sentences after, which
the rate alone misses in a long clip. A clip still under ``FRACTION`` of the rate after that
(after ``SLACK_SECONDS`` of allowance for VAD padding and very short clips) is decoded again
in parts split at its pauses, with beam search; if its text is still short, the segment is
flagged ``text_coverage`` and not kept (quality.py). A clip whose text is a decoder loop gets
the parts retry (its words are lost otherwise). A part that loops in the retry
is decoded once more alone with loop-suppressing decoding (no n-gram generated twice): a retry
is refused whole while any part loops (its speech would be in a segment whose text lacks it),
so one looping part would cost the text of all the others.
"""

from __future__ import annotations

import statistics
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from services.asr.batched import ClipText
from services.asr.clips import Clip

NO_SPACE_LANGUAGES = frozenset({"ja", "zh", "yue", "th", "lo", "my", "km", "bo"})
# Expected-rate floors (units per speech second): well under normal speech (English ~12-17
# letters/s, Japanese ~7-8 morae/s, other unspaced scripts ~6-9 characters/s), so a slow
# speaker is not flagged.
SPACED_FLOOR, UNSPACED_FLOOR = 8.0, 3.0
FRACTION = 0.5  # a clip with less than half the expected text is short
SLACK_SECONDS = 1.0  # VAD pads and one-word clips: this much speech needs no text
SAMPLE_SECONDS = 3.0  # clips shorter than this do not set the file's rate
RETRY_BEAM = 5
# A looping part's last try: no n-gram of this many tokens generated twice. The loops met
# (「ウウウウ...」 after a few words) stop at once with 3 to 6 and the part's words before the
# loop stay; at 5 a phrase said twice within one part is still allowed up to four tokens, and
# a one-token loop leaves at most 4 more tokens of it, under quality.is_loop's 8 units.
NO_REPEAT_NGRAM = 5
# A stretch of speech between two pauses this long with no word within WORD_REACH of it is a
# sentence the decoder skipped: the shortest sentences are about this long; word times are
# off by up to a few hundred ms.
UNCOVERED_SECONDS = 1.5
WORD_REACH = 0.3


def joiner(language: str | None) -> str:
    return "" if language in NO_SPACE_LANGUAGES else " "


def units(text: str, language: str | None = None) -> int:
    """Letters and digits (NFKC): words differ in length by language, characters less so.
    Japanese: the morae of its OpenJTalk reading, since a kanji says two or three of them and a
    kana one, so its characters depend on how a text is written (a misheard clip comes back as
    kana, more characters than the right kanji for the same speech)."""
    if language == "ja":
        return _morae(text)
    return sum(unicodedata.category(c)[0] in "LN" for c in unicodedata.normalize("NFKC", text))


def _morae(text: str) -> int:
    import pyopenjtalk

    from services.text.japanese import morae, reading

    kana = reading(pyopenjtalk.run_frontend(text)) if text.strip() else ""
    return len(morae("".join(c for c in kana if unicodedata.category(c)[0] in "LN")))


def floor_rate(language: str | None) -> float:
    return UNSPACED_FLOOR if language in NO_SPACE_LANGUAGES else SPACED_FLOOR


def expected_rate(samples: list[tuple[int, float]], language: str | None) -> float:
    """From ``(units, speech seconds)`` per clip of the file: its median rate, at least the
    language's floor."""
    rates = [u / s for u, s in samples if s >= SAMPLE_SECONDS]
    median = statistics.median(rates) if rates else 0.0
    return max(median, floor_rate(language))


def min_units(speech_seconds: float, rate: float) -> float:
    return FRACTION * rate * max(0.0, speech_seconds - SLACK_SECONDS)


def is_short(text: str, speech_seconds: float, rate: float, language: str | None = None
             ) -> bool:
    return units(text, language) < min_units(speech_seconds, rate)


Words = list[tuple[str, float, float, float]]


def uncovered(clip: Clip, words: Words | None) -> list[Clip]:
    """The stretches of ``clip``'s speech (between its pauses) at least ``UNCOVERED_SECONDS``
    long with no word within ``WORD_REACH`` of them; none without word times (nothing to tell)
    or without words (the rate check's case)."""
    if not words:
        return []
    near = sorted((w[1] - WORD_REACH, w[2] + WORD_REACH) for w in words)
    out: list[Clip] = []
    for part in clip.parts():
        t = part.start
        for a, b in [*near, (part.end, part.end)]:
            if b <= t or a > part.end:
                continue
            if min(a, part.end) - t >= UNCOVERED_SECONDS:
                out.append(Clip(t, min(a, part.end)))
            t = max(t, b)
    return _joined(out, near)


def _joined(stretches: list[Clip], near: list[tuple[float, float]]) -> list[Clip]:
    """Stretches with only pauses between them (no word near) as one clip with those pauses:
    decoded together they are heard as the first decode heard them, in context. Each of 2-3 s
    decoded alone came back as kana babble in fast Japanese where the run of them, decoded at
    once, was read (docs/asr.md)."""
    out: list[Clip] = []
    for s in stretches:
        last = out[-1] if out else None
        if last is not None and not any(a < s.start and b > last.end for a, b in near):
            out[-1] = Clip(last.start, s.end, [*last.pauses, (last.end, s.start)])
        else:
            out.append(s)
    return out


def _fill(texts: list[ClipText], gaps: dict[int, list[Clip]], decode: Decode,
          looped: Callable[[str], bool]) -> set[int]:
    """The stretches ``gaps`` names decoded alone and their words put in among their clip's
    (``texts`` updated in place; the text rebuilt from the words in time order, as Whisper's
    own text is their concatenation); returns the clips that gained words."""
    spans = [(i, g) for i, gs in gaps.items() for g in gs]
    got = _unlooped([g for _, g in spans], decode, looped)
    added: dict[int, Words] = {}
    for (i, _), t in zip(spans, got):
        if t.text.strip() and t.words and not looped(t.text):
            added.setdefault(i, []).extend(t.words)
    for i, extra in added.items():
        old = texts[i]
        words = sorted([*(old.words or []), *extra], key=lambda w: w[1])
        texts[i] = ClipText("".join(w[0] for w in words).strip(), old.avg_logprob,
                            old.no_speech_prob, words)
    return set(added)


@dataclass
class Coverage:
    rate: float  # expected units per speech second on this file
    retried: int  # clips decoded again (in parts, or the stretches their words missed)
    short: set[int]  # clips still short after that: flagged text_coverage


class Decode(Protocol):
    """Clips decoded alone, one text each: beam size, and the decoder's no-repeat n-gram size
    (0: off)."""

    def __call__(self, clips: list[Clip], beam: int, no_repeat: int, /) -> list[ClipText]: ...


def _better(new: str, old: str, looped: Callable[[str], bool], language: str) -> bool:
    if looped(new):
        return False
    return looped(old) or units(new, language) > units(old, language)


def _unlooped(parts: list[Clip], decode: Decode, looped: Callable[[str], bool]
              ) -> list[ClipText]:
    """``parts`` decoded with beam search; the ones whose text loops decoded once more, alone
    and in one batch, with no n-gram repeated, and their loop-free text taken."""
    flat = decode(parts, RETRY_BEAM, 0)
    again = [k for k, g in enumerate(flat) if looped(g.text)]
    if again:
        for k, g in zip(again, decode([parts[k] for k in again], RETRY_BEAM, NO_REPEAT_NGRAM)):
            if not looped(g.text):
                flat[k] = g
    return flat


def recover(clips: list[Clip], texts: list[ClipText], language: str, decode: Decode,
            looped: Callable[[str], bool] = lambda _: False) -> Coverage:
    """Decode the speech no word covers (:func:`uncovered`), then re-decode clips still short,
    or looped, in parts (at their pauses; whole when they have none; a looping part once more
    without repeats), keeping the better text; ``texts`` is updated in place. A decoder loop
    (quality.is_loop) is retried too: its words are lost otherwise, since a looped segment is
    not kept."""
    rate = expected_rate([(units(t.text, language), c.speech_seconds)
                          for c, t in zip(clips, texts) if not looped(t.text)], language)
    # The speech no word covers is decoded first, short clip or not, and the words there kept:
    # a window that stopped after its first sentences keeps them, where a clip decoded again
    # part by part lost them to the parts' babble (docs/asr.md). Only a clip still short
    # after that, or looped, is decoded again in parts.
    gaps = {i: g for i, (c, t) in enumerate(zip(clips, texts))
            if not looped(t.text) and (g := uncovered(c, t.words))}
    filled = _fill(texts, gaps, decode, looped) if gaps else set()
    retry = [i for i, (c, t) in enumerate(zip(clips, texts))
             if looped(t.text) or is_short(t.text, c.speech_seconds, rate, language)]
    if not retry:
        return Coverage(rate, len(filled), set())
    parts = [clips[i].parts() for i in retry]
    flat = _unlooped([p for ps in parts for p in ps], decode, looped)
    pos = 0
    for i, ps in zip(retry, parts):
        got = flat[pos:pos + len(ps)]
        pos += len(ps)
        text = joiner(language).join(g.text for g in got if g.text)
        if _better(text, texts[i].text, looped, language):
            words = None if any(g.words is None for g in got) else \
                [w for g in got for w in g.words or ()]  # file seconds: parts in order
            texts[i] = ClipText(text, statistics.fmean(g.avg_logprob for g in got),
                                min(g.no_speech_prob for g in got), words)
    still = {i for i in retry if not looped(texts[i].text)
             and is_short(texts[i].text, clips[i].speech_seconds, rate, language)}
    return Coverage(rate, len(filled | set(retry)), still)
