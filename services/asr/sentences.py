"""Segments a trainer can size: a clip cut at sentence ends, by its words' times.

A clip is speech joined across pauses up to the segment max (clips.py); on long-form speech
most clips are 22-30 s and hold several sentences. TTS recipes train on sentence- or
phrase-sized utterances (LibriTTS cuts at sentences; Emilia's segments are 3-30 s, most well
under 20), so a clip longer than ``asr_segment_target_seconds`` is cut after decoding, where a
sentence ends: a word whose text ends in the sentence punctuation Whisper wrote, followed by a
pause (the next word starts at least :data:`MIN_PAUSE_SECONDS` later, by the words' snapped
times). A cut falls between two words, never inside one. Sentences are packed in order: a
piece takes the next sentence while it stays within the target; a sentence longer than the
target stays whole (up to the segment max), and a last piece shorter than
:data:`PIECE_MIN_SECONDS` goes back to the one before it.

Decoding still sees the whole clip (the context Whisper needs); only the records are cut. Each
piece keeps its clip's language and scores; text forms (text_spoken, reading) are computed per
segment afterwards (services/text/forms.py), so each piece gets its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.asr.batched import ClipText
from services.asr.clips import Clip

# a sentence ends in . ? ! … (or their full-width forms), maybe followed by closing quotes
SENTENCE_END = re.compile(r"[.?!…。？！](?:[\"'”’)\]」』】》]*)$")
MIN_PAUSE_SECONDS = 0.15  # a sentence end needs a pause after it (the next word starts later)
# The shortest piece cutting makes. Its own, not the kept-segment minimum
# (asr_segment_min_seconds): that one judges speech VAD found alone (a one-word prompt is
# worth keeping at 0.5 s), while a sub-second sentence inside a long clip trains better with
# its neighbour, and long files' segments stay the same whatever that minimum is set to.
PIECE_MIN_SECONDS = 1.0

Word = tuple[str, float, float, float]  # (text, start, end, probability), file seconds


@dataclass
class Cut:
    """Clips and what goes with each, index for index (policy.build_segments' inputs)."""

    clips: list[Clip]
    texts: list[ClipText]
    languages: list[str | None]
    short: set[int]


def ends_sentence(text: str) -> bool:
    return bool(SENTENCE_END.search(text.strip()))


def sentence_ends(words: list[Word], min_pause: float = MIN_PAUSE_SECONDS) -> list[int]:
    """Indices ``k`` after which a sentence ends: ``words[k]`` ends in sentence punctuation and
    ``words[k + 1]`` starts at least ``min_pause`` after it ends."""
    return [k for k in range(len(words) - 1)
            if ends_sentence(words[k][0]) and words[k + 1][1] - words[k][2] >= min_pause]


def chosen(words: list[Word], ends: list[int], target: float,
           min_seconds: float = PIECE_MIN_SECONDS) -> list[int]:
    """The sentence ends to cut at: sentences packed in order while a piece (its first word's
    start to its last word's end) stays within ``target``; no piece is cut off shorter than
    ``min_seconds`` (a last one joins the one before)."""
    cuts: list[int] = []
    first = 0  # the piece's first word
    for n, k in enumerate(ends):
        following = ends[n + 1] if n + 1 < len(ends) else len(words) - 1
        # the piece so far ends at k; would taking the next sentence overrun the target?
        if words[following][2] - words[first][1] > target \
                and words[k][2] - words[first][1] >= min_seconds:
            cuts.append(k)
            first = k + 1
    if cuts and words[-1][2] - words[cuts[-1] + 1][1] < min_seconds:
        cuts.pop()
    return cuts


def _bounds(clip: Clip, before: Word, after: Word) -> tuple[float, float]:
    """Where the piece before a cut ends and the next one starts: at a VAD pause between the two
    words, its edges (as if VAD had split the clip there); else the middle of their gap."""
    mid = (before[2] + after[1]) / 2
    for a, b in clip.pauses:
        if a <= mid <= b:
            return a, b
    return mid, mid


def pieces(clip: Clip, words: list[Word], cuts: list[int]) -> list[tuple[Clip, list[Word]]]:
    """``clip`` cut after each word index in ``cuts``: each piece with its words and the clip's
    pauses that lie inside it."""
    out: list[tuple[Clip, list[Word]]] = []
    start, first = clip.start, 0
    for k in cuts:
        end, nxt = _bounds(clip, words[k], words[k + 1])
        out.append((Clip(start, end), words[first:k + 1]))
        start, first = nxt, k + 1
    out.append((Clip(start, clip.end), words[first:]))
    for c, _ in out:
        c.pauses = [(a, b) for a, b in clip.pauses if c.start < a and b < c.end]
    return out


def at_sentences(clips: list[Clip], texts: list[ClipText], languages: list[str | None],
                 short: set[int], target: float,
                 min_seconds: float = PIECE_MIN_SECONDS) -> Cut:
    """Each clip longer than ``target`` seconds cut at sentence ends (:func:`chosen`). A clip
    whose text is flagged short (coverage.py), has no words (word timestamps off, not
    decoded) or no sentence end with a pause after it stays whole. ``target`` 0: none cut."""
    out = Cut([], [], [], set())
    for i, (clip, t) in enumerate(zip(clips, texts)):
        words = [w for w in t.words or () if w[0].strip()]
        cuts: list[int] = []
        if target > 0 and clip.duration > target and i not in short and words:
            cuts = chosen(words, sentence_ends(words), target, min_seconds)
        if not cuts:
            out.short |= {len(out.clips)} if i in short else set()
            out.clips.append(clip)
            out.texts.append(t)
            out.languages.append(languages[i])
            continue
        for piece, piece_words in pieces(clip, words, cuts):
            out.clips.append(piece)
            out.texts.append(ClipText("".join(w[0] for w in piece_words).strip(),
                                      t.avg_logprob, t.no_speech_prob, piece_words))
            out.languages.append(languages[i])
    return out
