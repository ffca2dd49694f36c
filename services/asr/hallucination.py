"""Whisper's stock phrases: text it writes where nobody said it.

Trained on subtitled video, Whisper fills silence, music and applause with what subtitles end
with: "Thank you for watching", 「ご視聴ありがとうございました」, "please subscribe", a
subtitler's credit, a "♪". Kept, such a segment teaches a TTS model a voice saying words that
are not in its audio. A segment is flagged ``hallucination`` (quality.py; not kept) when its
whole text is made of :data:`PHRASES` (any language's: a Japanese stock phrase in an English
file is no more spoken), or is sound tags and symbols only, or holds a subtitler's credit,
*unless its audio says it* (:func:`supported`; never for tags and credits):

- its words' mean probability is at least ``MIN_WORD_PROBABILITY`` (per segment: a window's
  ``avg_logprob`` and ``no_speech_prob`` are shared by every clip packed into it, so they say
  little about one clip; they decide only without word timestamps);
- Whisper's window did not call it silence (``no_speech_prob`` at most ``MAX_NO_SPEECH_PROB``);
- the text fills its time: at least ``MIN_RATE`` letters per second (kana and kanji: the
  unspaced rate), half the slowest rate coverage.py expects; "you" over a second of applause
  is not what was said.

Thresholds from real and synthetic speech saying the phrases and from Whisper's own output over
music and noise (docs/asr.md, hallucinations; bench/wild/music.py counts both ways).
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Sequence

from services.asr.coverage import SPACED_FLOOR, UNSPACED_FLOOR, units
from services.asr.punctuation import PROMPTS

MIN_WORD_PROBABILITY = 0.5
MAX_NO_SPEECH_PROB = 0.6
MIN_RATE = 0.5  # of coverage.floor_rate: letters (or kana and kanji) per second
FALLBACK_MIN_AVG_LOGPROB = -1.0  # without words: the window's confidence

# normalised (see :func:`normalise`): NFKC, lower case, letters and digits only
PHRASES: frozenset[str] = frozenset({
    # English
    "thank you for watching", "thanks for watching", "thank you so much for watching",
    "thank you very much for watching", "thank you for watching and see you next time",
    "see you next time", "see you in the next video", "please subscribe",
    "please subscribe to my channel", "subscribe to my channel", "like and subscribe",
    "please like and subscribe", "dont forget to like and subscribe", "thank you",
    "thank you very much", "thank you so much", "thanks", "bye", "bye bye", "you",
    # Japanese
    "ご視聴ありがとうございました", "ご視聴ありがとうございます", "ご清聴ありがとうございました",
    "最後までご視聴いただきありがとうございました", "最後までご覧いただきありがとうございました",
    "ご覧いただきありがとうございました", "チャンネル登録お願いします",
    "チャンネル登録よろしくお願いします", "チャンネル登録をお願いします",
    "チャンネル登録と高評価をお願いします", "おやすみなさい", "ありがとうございました",
    "また次回お会いしましょう", "次回もお楽しみに",
})
# a subtitler's or translator's credit: never speech, wherever it stands in the text
CREDIT = re.compile(r"subtitles? by|captions? by|subtitled by|transcri(?:bed|ption) by|"
                    r"amara\.org|字幕|翻訳|提供", re.IGNORECASE)
# a sound tag: [Music], (applause), （拍手）, ♪, ...
TAG = re.compile(r"[\[\(（【][^\]\)）】]{0,20}[\]\)）】]")


def normalise(text: str) -> str:
    """NFKC, lower case, punctuation and symbols gone, runs of spaces made one (Japanese:
    none)."""
    t = unicodedata.normalize("NFKC", text).lower().replace("'", "").replace("’", "")
    kept = "".join(c if unicodedata.category(c)[0] in "LN" else " " for c in t)
    words = kept.split()
    if any(_unspaced(c) for w in words for c in w):
        return "".join(words)
    return " ".join(words)


def _unspaced(c: str) -> bool:
    return "\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff"


# the punctuation prompt's own clauses (punctuation.py): over music Whisper may write back the
# previous text it was given ("I'm fine.") instead of anything it heard
PROMPT_CLAUSES: frozenset[str] = frozenset(
    c for text in PROMPTS.values() for c in map(normalise, re.split(r"[.,!?。、？！，¿]", text))
    if c)
KNOWN: frozenset[str] = PHRASES | PROMPT_CLAUSES  # what a whole text may be made of


def _only_phrases(text: str) -> bool:
    """``text`` (normalised) is one or more known phrases and nothing else."""
    if not text:
        return False
    if text in KNOWN:
        return True
    for p in KNOWN:
        if text.startswith(p):
            rest = text[len(p):].lstrip()
            if rest and _only_phrases(rest):
                return True
    return False


def known_phrase(text: str) -> bool:
    """The text is a stock phrase (or several), a credit, or tags and symbols only."""
    if CREDIT.search(text):
        return True
    bare = TAG.sub(" ", text)
    if text.strip() and not normalise(bare):  # "♪", "[Music]", "(拍手)": no word spoken
        return True
    return _only_phrases(normalise(bare))


def supported(text: str, seconds: float, word_probabilities: Sequence[float] | None,
              avg_logprob: float, no_speech_prob: float) -> bool:
    """The audio says ``text`` (a :func:`known_phrase`): see the module's rules."""
    if CREDIT.search(text) or not normalise(TAG.sub(" ", text)):
        return False
    if no_speech_prob > MAX_NO_SPEECH_PROB:
        return False
    rate = UNSPACED_FLOOR if any(_unspaced(c) for c in text) else SPACED_FLOOR
    if units(text) < MIN_RATE * rate * seconds:
        return False
    if word_probabilities:
        return statistics.fmean(word_probabilities) >= MIN_WORD_PROBABILITY
    return avg_logprob >= FALLBACK_MIN_AVG_LOGPROB


def hallucinated(text: str, seconds: float, word_probabilities: Sequence[float] | None,
                 avg_logprob: float, no_speech_prob: float) -> bool:
    """A stock phrase, a tag or a credit the audio does not say."""
    return known_phrase(text) and not supported(text, seconds, word_probabilities,
                                                avg_logprob, no_speech_prob)
