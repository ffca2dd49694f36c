"""A second opinion on a short file's language: its speech decoded in the languages in question.

Whisper's language ID on a lone clip of 1-2 s is unsure and often wrong (base on clean
telephone prompts: Italian said Spanish at 0.9, Russian said Polish at 0.8, English said Hindi),
and a file dropped for its language is lost whole. So when the head holds little speech
(under :data:`SHORT_SECONDS`, all of it looked at) and the distributions drop the file, its
window is decoded greedily twice: in the likeliest kept language and in the likeliest other
one. The file is kept, in that kept language, when that decode is the likelier per token (its
``avg_logprob`` at least the other's plus :data:`MARGIN`): the decoder must read the words in
the language, not only hear its sounds. Whisper forced into a language the speech is not in
translates or stumbles, and its tokens are less likely (bench/language_short.py measures both
sides: clean clips kept, clips in languages not asked for still dropped).

Cost: two greedy decodes of one short window, only for short files the distributions drop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.asr.langid import LanguageGuess

SHORT_SECONDS = 4.0  # a head with less speech than this (a lone clip) gets the second opinion
MARGIN = 0.15  # nats per token the kept language's decode must lead by (chosen on the tune half)
MIN_SHARE = 0.01  # a kept language Whisper gives less than this is not tried

Decode = Callable[[str], float]  # a language -> avg_logprob of the window decoded in it


def candidates(guess: LanguageGuess, kept: list[str]) -> tuple[str, str] | None:
    """(the likeliest kept language, the likeliest other) by the head's distribution; None
    when no kept language reaches :data:`MIN_SHARE` or none other is named."""
    shares = guess.shares
    best_kept = max(kept, key=lambda k: shares.get(k, 0.0))
    others = [k for k in shares if k not in kept]
    if shares.get(best_kept, 0.0) < MIN_SHARE or not others:
        return None
    return best_kept, max(others, key=lambda k: shares[k])


def second_opinion(guess: LanguageGuess, kept: list[str], speech_seconds: float,
                   whole: bool, decode: Decode, margin: float = MARGIN) -> str | None:
    """The kept language a short file is in by decoding (None: dropped as before);
    ``whole``: the head looked at is the whole file."""
    if not whole or speech_seconds >= SHORT_SECONDS:
        return None
    pair = candidates(guess, kept)
    if pair is None:
        return None
    mine, other = pair
    return mine if decode(mine) >= decode(other) + margin else None
