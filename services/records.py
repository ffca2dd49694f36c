"""The records the stages write and read, each field named once (docs/architecture.md, formats).

=================  ==========================================================================
record             on disk
=================  ==========================================================================
``AsrLine``        ``asr/<shard>.jsonl``: one line per member of the raw shard, with its
``AsrSegment``     ``segments``
``Sidecar``        ``enhanced/<shard>.tar``: ``<key>_<idx>.json`` beside each 24 kHz FLAC
``Quality``        the sidecar's ``quality`` block (docs/quality.md), with ``Mos`` scores; the
                   tokens line and a skipped entry carry its filterable part
``TokenLine``      ``tokens/<tokenizer>/<shard>.jsonl``: one line per tokenized segment
``SkippedSegment`` an entry of the tokenize done record's ``skipped``
=================  ==========================================================================

Writers build a record and call ``to_json()`` (or ``to_dict()``); readers call
``from_json()`` / ``from_dict()``. Every record reads by the same rules:

- a key it does not know (written by a newer version) is kept in ``extra`` and written back
  unchanged after the known ones, so a reader never crashes on it and a rewrite never drops it;
- an absent optional field reads as its default (``None``, ``""``, ``False``, empty);
- an absent required field, or a field of the wrong JSON type, raises :class:`RecordError` (a
  ``ValueError``): the reader counts the line as malformed and goes on.

The elements of bulk number lists (codes, the speaker embedding) are not checked one by one:
that would cost more than parsing them. Frozen slotted dataclasses rather than pydantic models:
reading is ``json.loads`` plus one check per field (docs/architecture.md, formats, has the
measured cost of both).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Self

OK = "ok"  # AsrLine.status of a member that was transcribed
NEU_TOKENS = "neu_tokens"  # TokenLine.codes key of the NeuCodec codes (50 per second)

_ABSENT = object()
Parse = Callable[[Any], Any]


class RecordError(ValueError):
    """A line or sidecar that is not the record it should be."""


def segment_id(key: str, idx: int) -> str:
    """A kept segment's name: its member name in the enhanced tar and its ``id`` in tokens."""
    return f"{key}_{idx:04d}"


# --- how one field is read -----------------------------------------------------------------------
def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise RecordError(f"not a string: {v!r:.40}")
    return v


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RecordError(f"not a number: {v!r:.40}")
    return v  # as read: an int stays an int, so a rewrite gives the same bytes


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise RecordError(f"not an integer: {v!r:.40}")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise RecordError(f"not a boolean: {v!r:.40}")
    return v


def _list(v: Any) -> list:
    if not isinstance(v, list):
        raise RecordError(f"not a list: {v!r:.40}")
    return v


def _strs(v: Any) -> list[str]:
    return [_str(x) for x in _list(v)]


def _codes(v: Any) -> dict[str, list[int]]:
    if not isinstance(v, dict) or not all(isinstance(c, list) for c in v.values()):
        raise RecordError(f"not an object of code lists: {v!r:.40}")
    return v


def _opt(parse: Parse) -> Parse:
    return lambda v: None if v is None else parse(v)


def _rec(cls: type[Record]) -> Parse:
    return cls.from_dict


def _recs(cls: type[Record]) -> Parse:
    return lambda v: [cls.from_dict(x) for x in _list(v)]


def _m(parse: Parse, omit_none: bool = False) -> dict[str, Any]:
    """A record field's metadata: ``parse`` checks its JSON value; ``omit_none``: not written
    when None."""
    return {"parse": parse, "omit_none": omit_none}


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    parse: Parse
    required: bool
    omit_none: bool


_SPECS: dict[type, tuple[_Spec, ...]] = {}


def _spec(cls: type) -> tuple[_Spec, ...]:
    spec = _SPECS.get(cls)
    if spec is None:
        spec = _SPECS[cls] = tuple(
            _Spec(f.name, f.metadata["parse"],
                  f.default is MISSING and f.default_factory is MISSING, f.metadata["omit_none"])
            for f in fields(cls) if "parse" in f.metadata)
    return spec


def written_keys(cls: type[Record]) -> tuple[str, ...]:
    """The keys every record of ``cls`` has on disk, in order (not those omitted when None)."""
    return tuple(f.name for f in _spec(cls) if not f.omit_none)


def _dump(v: Any) -> Any:
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, list) and v and isinstance(v[0], Record):
        return [x.to_dict() for x in v]
    return v


class Record:
    """``to_dict``/``from_dict``/``to_json``/``from_json`` for the dataclasses below."""

    __slots__ = ()
    extra: dict[str, Any]

    @classmethod
    def from_dict(cls, d: Any) -> Self:
        if not isinstance(d, dict):
            raise RecordError(f"{cls.__name__}: not a JSON object: {d!r:.40}")
        kw: dict[str, Any] = {}
        for f in _spec(cls):
            v = d.get(f.name, _ABSENT)
            if v is _ABSENT:
                if f.required:
                    raise RecordError(f"{cls.__name__}: no {f.name!r}")
                continue
            try:
                kw[f.name] = f.parse(v)
            except RecordError as e:
                raise RecordError(f"{cls.__name__}.{f.name}: {e}") from None
        if len(kw) < len(d):  # keys of a newer writer: kept, written back as they were
            kw["extra"] = {k: v for k, v in d.items() if k not in kw}
        return cls(**kw)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        try:
            d = json.loads(text)
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
            raise RecordError(f"{cls.__name__}: not JSON: {e}"[:200]) from None
        return cls.from_dict(d)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for f in _spec(type(self)):
            v = getattr(self, f.name)
            if v is None and f.omit_none:
                continue
            d[f.name] = _dump(v)
        for k, v in self.extra.items():
            d.setdefault(k, v)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


# --- asr/<shard>.jsonl ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AsrSegment(Record):
    """One TTS-sized segment of a member; ``reason`` (comma-joined flags) is None when kept."""

    idx: int = field(metadata=_m(_int))
    start: float = field(metadata=_m(_num))
    end: float = field(metadata=_m(_num))
    text: str = field(default="", metadata=_m(_str))
    avg_logprob: float | None = field(default=None, metadata=_m(_opt(_num)))
    no_speech_prob: float | None = field(default=None, metadata=_m(_opt(_num)))
    compression_ratio: float | None = field(default=None, metadata=_m(_opt(_num)))
    kept: bool = field(default=False, metadata=_m(_bool))
    reason: str | None = field(default=None, metadata=_m(_opt(_str)))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AsrLine(Record):
    """One member of the raw shard: ``status`` is ``ok``, ``dropped:<why>`` or ``error:<why>``
    (``""`` when a malformed line has none: not ok); ``notes``: what the reader noticed but kept
    (e.g. ``truncated:...``), written only when there are some."""

    key: str = field(metadata=_m(_str))
    language: str | None = field(default=None, metadata=_m(_opt(_str)))
    language_probability: float | None = field(default=None, metadata=_m(_opt(_num)))
    duration: float | None = field(default=None, metadata=_m(_opt(_num)))
    status: str = field(default="", metadata=_m(_str))
    segments: list[AsrSegment] = field(default_factory=list, metadata=_m(_recs(AsrSegment)))
    notes: list[str] | None = field(default=None, metadata=_m(_opt(_strs), omit_none=True))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def kept(self) -> list[AsrSegment]:
        return [s for s in self.segments if s.kept]


# --- the quality block (docs/quality.md) ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Mos(Record):
    """DNSMOS P.835 scores (1-5); a score a reader's input lacks is None and not written."""

    sig: float | None = field(default=None, metadata=_m(_opt(_num), omit_none=True))
    bak: float | None = field(default=None, metadata=_m(_opt(_num), omit_none=True))
    ovrl: float | None = field(default=None, metadata=_m(_opt(_num), omit_none=True))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


_mos = _opt(_rec(Mos))


@dataclass(frozen=True, slots=True)
class Quality(Record):
    """A restored segment's annotations. ``None``: not computed (too short to judge speakers,
    not in the fidelity sample). The last three are the sidecar's only: see :meth:`filterable`."""

    dnsmos_before: Mos | None = field(default=None, metadata=_m(_mos))
    dnsmos_after: Mos | None = field(default=None, metadata=_m(_mos))
    dnsmos_delta: Mos | None = field(default=None, metadata=_m(_mos))
    speaker_consistency: float | None = field(default=None, metadata=_m(_opt(_num)))
    speaker_parts: int | None = field(default=None, metadata=_m(_opt(_int), omit_none=True))
    multi_speaker: bool | None = field(default=None, metadata=_m(_opt(_bool)))
    fidelity_cer: float | None = field(default=None, metadata=_m(_opt(_num)))
    restoration_changed_text: bool | None = field(default=None, metadata=_m(_opt(_bool)))
    speaker_embedding: list[float] | None = field(default=None,
                                                  metadata=_m(_opt(_list), omit_none=True))
    fidelity_text: str | None = field(default=None, metadata=_m(_opt(_str), omit_none=True))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def filterable(self) -> Quality:
        """What a tokens line and a skipped entry carry: all but the embedding, the parts count
        and the re-transcript (and keys this version does not know)."""
        return replace(self, speaker_parts=None, speaker_embedding=None, fidelity_text=None,
                       extra={})


_quality = _opt(_rec(Quality))


# --- enhanced/<shard>.tar: <key>_<idx>.json -------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Sidecar(Record):
    """A restored segment's text and origin: ``source_key`` and ``start``/``end`` (seconds) in
    its raw member, ``duration_seconds`` of the 24 kHz FLAC beside it."""

    text: str = field(default="", metadata=_m(_str))
    language: str | None = field(default=None, metadata=_m(_opt(_str)))
    source_key: str | None = field(default=None, metadata=_m(_opt(_str)))
    start: float | None = field(default=None, metadata=_m(_opt(_num)))
    end: float | None = field(default=None, metadata=_m(_opt(_num)))
    duration_seconds: float | None = field(default=None, metadata=_m(_opt(_num)))
    quality: Quality | None = field(default=None, metadata=_m(_quality, omit_none=True))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


# --- tokens/<tokenizer>/<shard>.jsonl and the tokenize done record --------------------------------
@dataclass(frozen=True, slots=True)
class TokenLine(Record):
    """One tokenized segment: ``id`` is its :func:`segment_id`, ``codes`` maps a codebook name
    (``neu_tokens``) to its codes; ``quality`` (filterable part) when the sidecar had one."""

    id: str = field(metadata=_m(_str))
    text: str = field(default="", metadata=_m(_str))
    codes: dict[str, list[int]] = field(default_factory=dict, metadata=_m(_codes))
    duration_seconds: float = field(default=0.0, metadata=_m(_num))
    quality: Quality | None = field(default=None, metadata=_m(_quality, omit_none=True))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def neu_tokens(self) -> list[int]:
        return self.codes.get(NEU_TOKENS, [])


@dataclass(frozen=True, slots=True)
class SkippedSegment(Record):
    """A segment the quality filter kept out of the tokens, with every reason (docs/quality.md)."""

    key: str = field(metadata=_m(_str))
    reasons: list[str] = field(default_factory=list, metadata=_m(_strs))
    seconds: float = field(default=0.0, metadata=_m(_num))
    quality: Quality | None = field(default=None, metadata=_m(_quality))
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
