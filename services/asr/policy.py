"""TTS segment policy: one segment per clip (cut at sentence ends past the target length,
sentences.py), with the words spoken in it.

A clip is speech joined across short pauses up to the segment max (clips.py); its words come
from the encoder windows that hold its speech, given to it by their aligned times
(windows.split): clips meet only at VAD pauses, so no cut falls inside a word. Flags come
from quality.py, with ``text_coverage`` from coverage.py and ``truncated`` for the segment that
ends where a truncated file was cut (its last words are cut).

With word timestamps (``words.py``), a segment is trimmed to its first and last word plus a
margin, never beyond the clip (the VAD's own padding): a breath or the next speaker's onset at
the clip's edge is left out, and no first syllable is cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.asr import records
from services.asr.batched import ClipText
from services.asr.clips import Clip
from services.asr.sentences import at_sentences
from services.asr.settings import AsrSettings
from services.asr.words import segment_words, trimmed
from services.records import AsrSegment

CUT_EDGE_SECONDS = 0.5  # a segment ending this close to a truncated file's end ends at the cut


@dataclass
class Segments:
    lines: list[AsrSegment]
    kept: int
    kept_seconds: float


def build_segments(clips: list[Clip], texts: list[ClipText], short: set[int],
                   settings: AsrSettings, cut_at: float | None = None,
                   languages: list[str | None] | None = None) -> Segments:
    """Segment records for a file's clips; ``cut_at``: where a truncated file ends;
    ``languages``: each clip's (one not in ``settings.asr_languages`` was not decoded: flagged
    ``language``, not kept). Clips longer than ``settings.asr_segment_target_seconds`` are cut at
    sentence ends first (sentences.py)."""
    from faster_whisper.transcribe import get_compression_ratio

    from services.asr.quality import flag_segment

    cut_up = at_sentences(clips, texts, languages or [None] * len(clips), short,
                          settings.asr_segment_target_seconds)
    clips, texts, short = cut_up.clips, cut_up.texts, cut_up.short
    languages = cut_up.languages if languages else None
    lines: list[AsrSegment] = []
    kept_seconds = 0.0
    for i, (clip, t) in enumerate(zip(clips, texts)):
        cr = get_compression_ratio(t.text) if t.text else 0.0
        cut = cut_at is not None and clip.end >= cut_at - CUT_EDGE_SECONDS
        words = segment_words(clip, t.words)
        start, end = trimmed(clip, words, settings.asr_word_margin_seconds, keep_end=cut)
        language = languages[i] if languages else None
        reasons = ["language"] if language is not None and language not in settings.asr_languages \
            else flag_segment(t.text, start, end, t.avg_logprob, t.no_speech_prob, cr,
                              settings, covered=i not in short, cut=cut,
                              word_probabilities=[w.probability for w in words or ()])
        lines.append(records.segment(i, start, end, t.text, t.avg_logprob,
                                     t.no_speech_prob, cr, reasons, words, language))
        if not reasons:
            kept_seconds += end - start
    return Segments(lines, sum(1 for x in lines if x.kept), kept_seconds)
