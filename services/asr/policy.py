"""TTS segment policy: cut each clip's transcript into segments at real pauses.

Whisper gives timestamped phrases per clip; VAD gives the pauses. A segment ends where a phrase
boundary falls inside (or within ``TOLERANCE`` of) a VAD pause, and its edges are the pause's
edges, so text and audio agree and no word is cut. Segments shorter than the min are merged
into a neighbour when that keeps them within the max. What remains too short or too long is
flagged by quality.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from services.asr.clips import Clip

TOLERANCE = 0.4  # seconds: Whisper's timestamps are this rough
NO_SPACE_LANGUAGES = frozenset({"ja", "zh", "yue", "th", "lo", "my", "km", "bo"})


@dataclass
class Phrase:
    start: float
    end: float
    text: str


@dataclass
class Piece:
    start: float
    end: float
    texts: list[str]


def _joiner(language: str | None) -> str:
    return "" if language in NO_SPACE_LANGUAGES else " "


def _pause_between(clip: Clip, end_prev: float, start_next: float) -> tuple[float, float] | None:
    lo, hi = min(end_prev, start_next), max(end_prev, start_next)
    for ps, pe in clip.pauses:
        if lo <= pe + TOLERANCE and hi >= ps - TOLERANCE:
            return ps, pe
    return None


def split_clip(clip: Clip, phrases: list[Phrase], min_seconds: float, max_seconds: float,
               language: str | None) -> list[tuple[float, float, str]]:
    """``(start, end, text)`` segments of one clip; the union of their spans is the clip minus
    the pauses cut at. A clip with no phrase gives one empty segment (flagged ``empty_text``)."""
    phrases = [p for p in phrases if p.text.strip()]
    if not phrases:
        return [(clip.start, clip.end, "")]
    pieces = [Piece(clip.start, clip.end, [phrases[0].text.strip()])]
    for prev, cur in pairwise(phrases):
        pause = _pause_between(clip, prev.end, cur.start)
        if pause is not None and pieces[-1].start < pause[0] and pause[1] < clip.end:
            pieces[-1].end = pause[0]
            pieces.append(Piece(pause[1], clip.end, []))
        pieces[-1].texts.append(cur.text.strip())
    pieces = _merge_short(pieces, min_seconds, max_seconds)
    sep = _joiner(language)
    return [(p.start, p.end, sep.join(t for t in p.texts if t)) for p in pieces]


def _merge_short(pieces: list[Piece], min_seconds: float, max_seconds: float) -> list[Piece]:
    out: list[Piece] = []
    for p in pieces:
        if out:
            prev = out[-1]
            short = (prev.end - prev.start) < min_seconds or (p.end - p.start) < min_seconds
            if short and p.end - prev.start <= max_seconds:
                prev.end = p.end
                prev.texts.extend(p.texts)
                continue
        out.append(p)
    return out
