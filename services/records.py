"""The records the stages write and read, each field named once (docs/architecture.md, formats).

- ``AsrLine`` (with its ``AsrSegment``s): ``asr/<shard>.jsonl``, one per raw-shard member;
- ``Sidecar``: ``enhanced/<shard>.tar``, the ``<key>_<idx>.json`` beside each 24 kHz FLAC;
- ``Quality`` (with ``Mos`` scores): the sidecar's ``quality`` block (docs/quality.md); a tokens
  line and a skipped entry carry its filterable part;
- ``TokenLine``: ``tokens/<tokenizer>/<shard>.jsonl``, one per tokenized segment;
- ``SkippedSegment``: an entry of the tokenize done record's ``skipped``.

Writers build a record (its fields are checked then) and call ``to_json()``; readers call
``from_json()`` (or ``from_dict()`` on an object already parsed). Every record reads by the
same rules:

- a key it does not know (written by a newer version) is kept (``extra``) and written back
  after the known ones, so a reader never crashes on it and a rewrite never drops it;
- an absent optional field reads as its default (``None``, ``""``, ``False``, empty);
- an absent required field, or a value of the wrong JSON type (strict: no ``"1.5"`` for a
  number, no ``1`` for a boolean; an integer is a number), raises :class:`RecordError` (a
  ``ValueError``): the reader counts the line as malformed and goes on.

Frozen pydantic models: parsing and checking run in pydantic-core, faster than ``json.loads``
alone (docs/architecture.md, formats, has the measured cost). ``to_json`` writes compact JSON
(no spaces after separators, non-ASCII as UTF-8): the same keys and values as the dict +
``json.dumps`` writers before, in 0.4x their time.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from common.ledger.records import Seconds
from common.record import Record, RecordError, omitted, written_keys

__all__ = ["Record", "RecordError", "written_keys"]

class LineStatus(StrEnum):
    """What became of a raw member (an asr line's ``status`` before its ``:<reason>``)."""

    OK = "ok"  # transcribed
    DROPPED = "dropped"  # read, nothing to keep (no speech, another language)
    ERROR = "error"  # could not be read or transcribed


OK = LineStatus.OK.value  # AsrLine.status of a member that was transcribed


def line_status(kind: LineStatus, reason: str = "") -> str:
    """The ``status`` written for ``kind`` and ``reason`` (``dropped:language``, ``ok``)."""
    return f"{kind.value}:{reason}" if reason else kind.value
NEU_TOKENS = "neu_tokens"  # TokenLine.codes key of the NeuCodec codes (50 per second)


def segment_id(key: str, idx: int, part: int | None = None) -> str:
    """A kept segment's name: its member name in the enhanced tar and its ``id`` in tokens.
    ``part``: the piece of an asr segment cut at a speaker change (enhance), ``<id>-<part>``."""
    return f"{key}_{idx:04d}" + ("" if part is None else f"-{part}")


SHARD_MARK = "@"  # between a name and its shard in a corpus id


def corpus_id(name: str, shard: int) -> str:
    """A name unique within its shard (a :func:`segment_id`, a speaker label
    ``<source_key>#s<n>``) made unique in the whole corpus: ``<name>@<shard:06d>``. Two shards
    may hold the same member keys (two ``pack-audio`` runs): a key's identity includes its
    shard. A name that already ends in ``@<digits>`` is returned as it is (a segment id or a
    speaker label always ends otherwise: ``_NNNN``, ``-N``, ``#sN``). Per-shard files (the
    enhanced tar's members, the tokens lines) name segments within their shard; what spans
    shards (the dedup result, the export) uses this."""
    if shard_of(name) is not None:
        return name
    return f"{name}{SHARD_MARK}{shard:06d}"


def shard_of(cid: str) -> int | None:
    """The shard a :func:`corpus_id` names (None for a name within its shard)."""
    _, mark, tail = cid.rpartition(SHARD_MARK)
    return int(tail) if mark and tail.isascii() and tail.isdigit() else None


def local_name(cid: str) -> str:
    """A :func:`corpus_id` without its shard (a name within its shard as it is)."""
    return cid.rpartition(SHARD_MARK)[0] if shard_of(cid) is not None else cid


# --- asr/<shard>.jsonl ---------------------------------------------------------------------------
class Word(Record):
    """One word of a segment, times in seconds in its raw member (Whisper's cross-attention
    alignment); ``probability``: the word's token probability."""

    word: str
    start: float
    end: float
    probability: float


class AsrSegment(Record):
    """One TTS-sized segment of a member; ``reason`` (comma-joined flags) is None when kept.
    ``words`` and ``min_word_probability`` (the lowest of them) when word timestamps are on.
    ``language``: the segment's own (a file may switch languages; the line's is its main one),
    absent on lines written before segments had one (read the line's then)."""

    idx: int
    start: float
    end: float
    text: str = ""
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    kept: bool = False
    reason: str | None = None
    # the text as spoken (services/text: numbers, dates, units written out), what wrote it, and
    # for Japanese its katakana reading and accent phrases; English IPA when asked
    text_spoken: str | None = omitted()
    text_spoken_by: str | None = omitted()
    reading: str | None = omitted()
    accent: str | None = omitted()
    phonemes: str | None = omitted()
    words: list[Word] | None = omitted()
    min_word_probability: float | None = omitted()
    language: str | None = omitted()


class AsrLine(Record):
    """One member of the raw shard: ``status`` is ``ok``, ``dropped:<why>`` or ``error:<why>``
    (``""`` when a malformed line has none: not ok); ``notes``: what the reader noticed but kept
    (e.g. ``truncated:...``), written only when there are some."""

    key: str
    language: str | None = None
    language_probability: float | None = None
    duration: float | None = None
    status: str = ""
    segments: list[AsrSegment] = Field(default_factory=list)
    notes: list[str] | None = omitted()

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def outcome(self) -> tuple[LineStatus, str]:
        """The status as its kind and reason (a status of no known kind, or none, reads as an
        error whose reason says so)."""
        kind, _, reason = self.status.partition(":")
        try:
            got = LineStatus(kind)
        except ValueError:
            return LineStatus.ERROR, f"unknown_status:{self.status[:40]}" if self.status \
                else "missing_status"
        return got, reason or ("" if got is LineStatus.OK else "unspecified")

    @property
    def kept(self) -> list[AsrSegment]:
        return [s for s in self.segments if s.kept]


TIME_SLACK_SECONDS = 0.001  # times and duration are each rounded to the ms when written


def asr_line_problem(line: AsrLine, max_seconds: float | None = None) -> str | None:
    """Why an ``ok`` line cannot be cut as it says (None when it can): each number finite,
    ``0 <= start < end <= duration`` (``duration`` at most ``max_seconds`` when given),
    ``idx >= 0`` and unique in the line. A reader that trusted it once cut a 3,001 s segment
    from a 3.7 s file (``start: -3000``) and named one ``k_-001``."""
    import math

    d = line.duration
    if d is None or not math.isfinite(d) or d <= 0:
        return f"duration {d} is not a positive finite number of seconds"
    if max_seconds is not None and d > max_seconds:
        return f"duration {d} is over the {max_seconds} s a member may last"
    seen: set[int] = set()
    for s in line.segments:
        where = f"segment idx {s.idx}"
        if s.idx < 0:
            return f"{where}: idx is negative"
        if s.idx in seen:
            return f"{where}: idx repeats"
        seen.add(s.idx)
        if not (math.isfinite(s.start) and math.isfinite(s.end)):
            return f"{where}: start {s.start} / end {s.end} not finite"
        if not 0 <= s.start < s.end <= d + TIME_SLACK_SECONDS:
            return f"{where}: not 0 <= start ({s.start}) < end ({s.end}) <= duration ({d})"
    return None


# --- the quality block (docs/quality.md) ---------------------------------------------------------
class Mos(Record):
    """DNSMOS P.835 scores (1-5); a score a reader's input lacks is None and not written."""

    sig: float | None = omitted()
    bak: float | None = omitted()
    ovrl: float | None = omitted()


class Pitch(Record):
    """f0 over the voiced frames of the restored segment, in Hz."""

    mean: float
    std: float


class Quality(Record):
    """A restored segment's annotations. ``None``: not computed (too short to judge speakers,
    not in the fidelity sample). The sidecar has them all; a tokens line :meth:`filterable`.
    The prosody fields (``speech_fraction`` .. ``snr``, docs/quality.md) are not written when
    absent (annotations made before they existed)."""

    dnsmos_before: Mos | None = None
    dnsmos_after: Mos | None = None
    dnsmos_delta: Mos | None = None
    speaker_consistency: float | None = None
    speaker_parts: int | None = omitted()
    multi_speaker: bool | None = None
    fidelity_cer: float | None = None
    restoration_changed_text: bool | None = None
    speaker_embedding: list[float] | None = omitted()
    # CAM++'s (ONSEI_QUALITY_SPEAKER_LABEL_MODEL), beside Resemblyzer's in the labels
    speaker_embedding_campplus: list[float] | None = omitted()
    fidelity_text: str | None = omitted()
    speech_fraction: float | None = omitted()  # share of the restored audio that is speech
    pitch: Pitch | None = omitted()  # None: no voiced frame
    speaking_rate: float | None = omitted()  # in speaking_rate_unit, per second of speech
    speaking_rate_unit: str | None = omitted()  # chars/s or mora/s
    snr: float | None = omitted()  # dB, on the input before restoration
    music: float | None = omitted()  # 0-1: share of the input's pauses under a held tone
    overlap: float | None = omitted()  # 0-1: share of the voiced time with two talkers at once

    def filterable(self) -> Quality:
        """What a tokens line and a skipped entry carry: all but the sidecar-only fields (and
        keys this version does not know)."""
        return Quality(**{k: getattr(self, k) for k in Quality.model_fields
                          if k not in _SIDECAR_ONLY})


_SIDECAR_ONLY = frozenset({"speaker_parts", "speaker_embedding", "speaker_embedding_campplus",
                           "fidelity_text"})


# --- enhanced/<shard>.tar: <key>_<idx>.json -------------------------------------------------------
class Sidecar(Record):
    """A restored segment's text and origin: ``source_key`` and ``start``/``end`` (seconds) in
    its raw member, ``duration_seconds`` of the 24 kHz FLAC beside it."""

    text: str = ""
    language: str | None = None
    source_key: str | None = None
    start: float | None = None
    end: float | None = None
    duration_seconds: float | None = None
    quality: Quality | None = omitted()
    speaker_id: str | None = omitted()  # "<source_key>#s<n>": the voice within its source file
    min_word_probability: float | None = omitted()  # the asr segment's
    text_spoken: str | None = omitted()  # the asr segment's (a piece's: from its text)
    text_spoken_by: str | None = omitted()
    reading: str | None = omitted()
    accent: str | None = omitted()
    phonemes: str | None = omitted()


# --- tokens/<tokenizer>/<shard>.jsonl and the tokenize done record --------------------------------
class TokenLine(Record):
    """One tokenized segment: ``id`` is its :func:`segment_id`, ``codes`` maps a codebook name
    (``neu_tokens``) to its codes; ``quality`` (filterable part) when the sidecar had one."""

    id: str
    text: str = ""
    codes: dict[str, list[int]] = Field(default_factory=dict)
    duration_seconds: float = 0.0
    quality: Quality | None = omitted()
    speaker_id: str | None = omitted()  # the sidecar's
    text_spoken: str | None = omitted()  # the sidecar's, and the forms below
    text_spoken_by: str | None = omitted()
    reading: str | None = omitted()
    accent: str | None = omitted()
    phonemes: str | None = omitted()
    min_word_probability: float | None = omitted()  # the sidecar's
    language: str | None = omitted()  # the sidecar's: the segment's own
    # the voice across the corpus (``onsei speakers``, docs/speakers.md), where its result
    # covered the shard when it was tokenized, and the segment's cosine to that voice (0-1)
    corpus_speaker_id: str | None = omitted()
    corpus_speaker_confidence: float | None = omitted()

    @property
    def neu_tokens(self) -> list[int]:
        return self.codes.get(NEU_TOKENS, [])


def seconds_problem(seconds: float, max_seconds: float | None = None) -> str | None:
    """Why a segment's ``duration_seconds`` (a tokens line's, a sidecar's, a skipped entry's
    ``seconds``) cannot be counted, as a short reason kind (None when it can): finite, not
    negative, at most ``max_seconds`` (a segment is never longer than its member). Summed
    unchecked, one ``NaN`` made every total ``nan`` hours."""
    import math

    if not math.isfinite(seconds):
        return "duration_seconds not finite"
    if seconds < 0:
        return "duration_seconds negative"
    if max_seconds is not None and seconds > max_seconds:
        return "duration_seconds over max_member_seconds"
    return None


class SkippedSegment(Record):
    """A segment the quality filter kept out of the tokens, with every reason (docs/quality.md)."""

    key: str
    reasons: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    quality: Quality | None = None


# A tokenize done record lists at most this many skipped segments (the first ones): a shard
# whose every segment is filtered would otherwise write one entry per segment. The tally is
# complete whatever the cap.
MAX_SKIPPED_ENTRIES = 200


class SkipTally(Record):
    """What the quality filter removed from one shard, by reason kind (``duplicate_of:<id>``
    counts under ``duplicate_of``; a segment with two reasons under both)."""

    segments: int = Field(0, ge=0)
    seconds: Seconds = 0.0
    seconds_annotated: Seconds = 0.0  # of segments with quality annotations
    segments_by_reason: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    seconds_by_reason: dict[str, Seconds] = Field(default_factory=dict)
