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

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OK = "ok"  # AsrLine.status of a member that was transcribed
NEU_TOKENS = "neu_tokens"  # TokenLine.codes key of the NeuCodec codes (50 per second)


class RecordError(ValueError):
    """A line or sidecar that is not the record it should be."""


def segment_id(key: str, idx: int) -> str:
    """A kept segment's name: its member name in the enhanced tar and its ``id`` in tokens."""
    return f"{key}_{idx:04d}"


def _is_none(v: Any) -> bool:
    return v is None


def _omitted() -> Any:
    """An optional field that is not written at all when None."""
    return Field(default=None, exclude_if=_is_none)


def written_keys(cls: type[Record]) -> tuple[str, ...]:
    """The keys every record of ``cls`` has on disk, in order (not those omitted when None)."""
    return tuple(n for n, f in cls.model_fields.items() if f.exclude_if is None)


def _error(cls: type, e: ValidationError) -> RecordError:
    why = "; ".join(f"{'.'.join(map(str, x['loc'])) or '-'}: {x['msg']}" for x in e.errors()[:3])
    return RecordError(f"{cls.__name__}: {why}"[:300])


class Record(BaseModel):
    """Frozen, strict, and keeping unknown keys (``extra``)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="allow")

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        try:
            return cls.model_validate_json(text)
        except ValidationError as e:
            raise _error(cls, e) from None

    @classmethod
    def from_dict(cls, d: Any) -> Self:
        try:
            return cls.model_validate(d)
        except ValidationError as e:
            raise _error(cls, e) from None

    def to_json(self) -> str:
        return self.model_dump_json()

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @property
    def extra(self) -> dict[str, Any]:
        """The keys this version does not know, as read."""
        return self.model_extra or {}


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
    ``words`` and ``min_word_probability`` (the lowest of them) when word timestamps are on."""

    idx: int
    start: float
    end: float
    text: str = ""
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    kept: bool = False
    reason: str | None = None
    words: list[Word] | None = _omitted()
    min_word_probability: float | None = _omitted()


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
    notes: list[str] | None = _omitted()

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def kept(self) -> list[AsrSegment]:
        return [s for s in self.segments if s.kept]


# --- the quality block (docs/quality.md) ---------------------------------------------------------
class Mos(Record):
    """DNSMOS P.835 scores (1-5); a score a reader's input lacks is None and not written."""

    sig: float | None = _omitted()
    bak: float | None = _omitted()
    ovrl: float | None = _omitted()


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
    speaker_parts: int | None = _omitted()
    multi_speaker: bool | None = None
    fidelity_cer: float | None = None
    restoration_changed_text: bool | None = None
    speaker_embedding: list[float] | None = _omitted()
    fidelity_text: str | None = _omitted()
    speech_fraction: float | None = _omitted()  # share of the restored audio that is speech
    pitch: Pitch | None = _omitted()  # None: no voiced frame
    speaking_rate: float | None = _omitted()  # in speaking_rate_unit, per second of speech
    speaking_rate_unit: str | None = _omitted()  # chars/s or mora/s
    snr: float | None = _omitted()  # dB, on the input before restoration

    def filterable(self) -> Quality:
        """What a tokens line and a skipped entry carry: all but the sidecar-only fields (and
        keys this version does not know)."""
        return Quality(**{k: getattr(self, k) for k in Quality.model_fields
                          if k not in _SIDECAR_ONLY})


_SIDECAR_ONLY = frozenset({"speaker_parts", "speaker_embedding", "fidelity_text"})


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
    quality: Quality | None = _omitted()
    speaker_id: str | None = _omitted()  # "<source_key>#s<n>": the voice within its source file
    min_word_probability: float | None = _omitted()  # the asr segment's


# --- tokens/<tokenizer>/<shard>.jsonl and the tokenize done record --------------------------------
class TokenLine(Record):
    """One tokenized segment: ``id`` is its :func:`segment_id`, ``codes`` maps a codebook name
    (``neu_tokens``) to its codes; ``quality`` (filterable part) when the sidecar had one."""

    id: str
    text: str = ""
    codes: dict[str, list[int]] = Field(default_factory=dict)
    duration_seconds: float = 0.0
    quality: Quality | None = _omitted()
    speaker_id: str | None = _omitted()  # the sidecar's
    min_word_probability: float | None = _omitted()  # the sidecar's

    @property
    def neu_tokens(self) -> list[int]:
        return self.codes.get(NEU_TOKENS, [])


class SkippedSegment(Record):
    """A segment the quality filter kept out of the tokens, with every reason (docs/quality.md)."""

    key: str
    reasons: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    quality: Quality | None = None
