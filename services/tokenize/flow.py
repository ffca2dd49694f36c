"""One shard through the codec: read + resample + features ahead (thread), encode in
length-bucketed batches, write JSONL behind (thread).

Segments are taken in windows of ``window_seconds`` of audio; each window is bucketed by
length, encoded, and written back in the tar's own order. A bad segment (unreadable audio,
bad sidecar, too short) is counted and recorded with its reason; the rest go on. A segment the
quality filter rejects (docs/quality.md) is not decoded: it is listed in ``skipped`` with its
reasons. Lines carry the sidecar's filterable ``quality`` fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from common.ledger.stats import ErrorEntry
from common.models.clock import ModelClock
from common.record import RecordError
from common.shards.audio import AudioError, read_audio_bytes, resample
from common.shards.members import KeyAudio, iter_keys
from common.shards.readahead import read_ahead
from common.shards.tar import MemberError
from common.shards.writebehind import WriteBehind
from services.records import NEU_TOKENS, Quality, Sidecar, SkippedSegment, TokenLine
from services.rules.policy import FilterPolicy
from services.rules.skipped import SkipLog
from services.speakers.result import Label
from services.text.forms import TextForms
from services.tokenize.batching import plan_batches
from services.tokenize.encode import HOP, Prepared, encode_batch
from services.tokenize.errors import Problem, SegmentError

SR = 16_000
FRAME_RATE = SR // HOP  # 50 codes per second


@dataclass
class Segment:
    index: int
    key: str
    text: str = ""
    duration: float = 0.0  # seconds of the enhanced audio at its own rate
    prepared: Prepared | None = None
    error: str | None = None
    quality: Quality | None = None  # the sidecar's filterable annotations
    speaker_id: str | None = None  # the sidecar's (its voice within the source file)
    min_word_probability: float | None = None  # the sidecar's
    language: str | None = None  # the sidecar's: the segment's own
    corpus_speaker: Label | None = None  # onsei speakers' id and confidence, where it covers
    forms: TextForms = field(default_factory=TextForms)  # the sidecar's text_spoken & co
    skipped: list[str] = field(default_factory=list)  # quality filter reasons


@dataclass
class RunStats:
    segments: int = 0
    tokenized: int = 0
    errors: int = 0
    tokens: int = 0
    seconds_in: float = 0.0
    seconds_out: float = 0.0
    batches: int = 0
    frames: int = 0
    padded_frames: int = 0
    error_samples: list[ErrorEntry] = field(default_factory=list)
    skips: SkipLog = field(default_factory=SkipLog)  # the first entries, a tally of all

    def add_skip(self, seg: Segment) -> None:
        self.skips.add(SkippedSegment(key=seg.key, reasons=seg.skipped,
                                      seconds=round(seg.duration, 2), quality=seg.quality))

    def add_error(self, key: str | None, reason: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 50:  # the record stays small; counts are complete
            self.error_samples.append(ErrorEntry(key=key, reason=reason))


def read_segments(path: Path, prepare: Callable[[np.ndarray], Prepared],
                  max_member_bytes: int | None,
                  quality_filter: FilterPolicy | None = None,
                  speakers: Mapping[str, Label] | None = None,
                  ) -> Iterator[Segment | MemberError]:
    """``speakers``: the shard's corpus speaker labels by segment name (None: not linked)."""
    index = 0
    # the audio of each key as every stage decides it (common.shards.members)
    for item in iter_keys(path, max_member_bytes):
        if item.key is None or (item.error is not None and item.error != "no_audio"):
            yield MemberError(item.key, item.name, item.error or "bad_member")
            continue
        seg = Segment(index=index, key=item.key,
                      corpus_speaker=None if speakers is None else speakers.get(item.key))
        index += 1
        try:
            meta = _sidecar(item)
            seg.text = meta.text
            seg.quality = None if meta.quality is None else meta.quality.filterable()
            seg.speaker_id = meta.speaker_id
            seg.min_word_probability = meta.min_word_probability
            seg.language = meta.language
            seg.forms = TextForms.of(meta)
            if quality_filter is not None and (
                    reasons := quality_filter.reasons(meta.quality, item.key)):
                seg.skipped = reasons
                seg.duration = float(meta.duration_seconds or 0.0)
                yield seg
                continue
            if item.error is not None:
                raise SegmentError(Problem.MISSING_AUDIO)
            seg.duration, seg.prepared = _prepared(item.audio_bytes(), prepare)
        except SegmentError as e:
            seg.error = e.reason
        yield seg


def _sidecar(item: KeyAudio) -> Sidecar:
    if "json" not in item.files:
        raise SegmentError(Problem.MISSING_JSON)
    try:
        return Sidecar.from_json(item.data("json"))
    except (RecordError, UnicodeDecodeError) as e:
        raise SegmentError(Problem.BAD_JSON, str(e)) from None


def _prepared(data: bytes, prepare: Callable[[np.ndarray], Prepared]) -> tuple[float, Prepared]:
    """(seconds of the FLAC at its own rate, the codec's input for it at 16 kHz)."""
    try:
        audio, sr = read_audio_bytes(data)
    except AudioError as e:
        raise SegmentError(Problem.AUDIO, e.reason) from None
    audio16 = resample(audio, sr, SR)
    if audio16.shape[0] < HOP:
        raise SegmentError(Problem.TOO_SHORT)
    try:
        return audio.shape[0] / sr, prepare(audio16)
    except ValueError as e:
        raise SegmentError(Problem.PREPARE, f"{type(e).__name__}: {e}") from None


def _threaded(it: Iterator[Any], maxsize: int) -> Iterator[Any]:
    """Run ``it`` in a thread, ``maxsize`` items ahead; its exception surfaces here."""
    return read_ahead(it, maxsize, name="tokenize-reader")


class JsonlWriter:
    """Writes lines in a thread so encoding never waits on the disk."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115
        self._behind: WriteBehind[list[str]] = WriteBehind(self._fh.writelines, 64,
                                                           name="tokenize-writer")

    def put(self, lines: list[str]) -> None:
        self._behind.put(lines)

    def close(self) -> None:
        try:
            self._behind.join()
        finally:
            self._fh.close()


def token_line(seg: Segment, codes: np.ndarray) -> str:
    spk, conf = seg.corpus_speaker or (None, None)
    return TokenLine(id=seg.key, text=seg.text, codes={NEU_TOKENS: codes.tolist()},
                     corpus_speaker_id=spk, corpus_speaker_confidence=conf,
                     duration_seconds=round(float(seg.duration), 2),
                     quality=seg.quality, speaker_id=seg.speaker_id,
                     min_word_probability=seg.min_word_probability,
                     language=seg.language, **seg.forms.fields()).to_json() + "\n"


@dataclass
class PipelineConfig:
    policy: str = "exact"
    batch_seconds: float = 240.0
    max_batch: int = 64
    max_waste: float = 0.03
    window_seconds: float = 1800.0
    read_ahead: int = 256  # segments prepared ahead of the model
    max_member_bytes: int | None = None
    quality_filter: FilterPolicy | None = None
    speakers: Mapping[str, Label] | None = None  # the shard's corpus speakers, by segment


Encode = Callable[[list[Prepared], str], list[np.ndarray]]  # (prepared batch, policy) -> codes


def run_pipeline(model: Any, variant: str, tar: Path, out: Path, cfg: PipelineConfig,
                 prepare: Callable[[np.ndarray], Prepared],
                 clock: ModelClock | None = None) -> RunStats:
    """``clock``: the stage's; each codec call is timed on it (the engine's model_seconds)."""
    stats = RunStats()
    encode: Encode = (clock or ModelClock()).timed(partial(encode_batch, model))
    writer = JsonlWriter(out)
    window: list[Segment] = []
    window_seconds = 0.0
    try:
        segments = read_segments(tar, prepare, cfg.max_member_bytes, cfg.quality_filter,
                                 cfg.speakers)
        for item in _threaded(segments, cfg.read_ahead):
            if isinstance(item, MemberError):
                stats.add_error(item.key, SegmentError(Problem.MEMBER, item.reason).reason)
                continue
            if item.skipped:
                stats.segments += 1
                stats.add_skip(item)
                continue
            stats.segments += 1
            stats.seconds_in += item.duration
            window.append(item)
            window_seconds += item.duration
            if window_seconds >= cfg.window_seconds:
                writer.put(_encode_window(encode, window, cfg, stats))
                window, window_seconds = [], 0.0
        if window:
            writer.put(_encode_window(encode, window, cfg, stats))
    finally:
        writer.close()
    return stats


def _encode_window(encode: Encode, window: list[Segment], cfg: PipelineConfig,
                   stats: RunStats) -> list[str]:
    good = [s for s in window if s.prepared is not None]
    for s in window:
        if s.error is not None:
            stats.add_error(s.key, s.error)
    lengths = [s.prepared.frames for s in good]  # type: ignore[union-attr]  # good: prepared
    plan = plan_batches(lengths, max_frames=int(cfg.batch_seconds * FRAME_RATE),
                        max_items=cfg.max_batch, max_waste=cfg.max_waste)
    stats.frames += plan.frames
    stats.padded_frames += plan.padded_frames
    codes: dict[int, np.ndarray] = {}
    for batch in plan.batches:
        segs = [good[i] for i in batch]
        for seg, c in _encode_split(encode, segs, cfg.policy, stats):
            codes[seg.index] = c
    lines = []
    for s in window:
        got = codes.get(s.index)
        if got is None:
            continue
        stats.tokenized += 1
        stats.tokens += int(got.shape[0])
        stats.seconds_out += s.duration
        lines.append(token_line(s, got))
    return lines


def _encode_split(encode: Encode, segs: list[Segment], policy: str,
                  stats: RunStats) -> list[tuple[Segment, np.ndarray]]:
    """Encode a batch; on out-of-memory, halve it (a lone segment that still fails is an error)."""
    import torch

    try:
        out = encode([s.prepared for s in segs], policy)  # type: ignore[misc]  # all prepared
        stats.batches += 1
        return list(zip(segs, out))
    except torch.OutOfMemoryError:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        if len(segs) == 1:
            stats.add_error(segs[0].key, SegmentError(Problem.OUT_OF_MEMORY).reason)
            return []
        mid = len(segs) // 2
        return (_encode_split(encode, segs[:mid], policy, stats)
                + _encode_split(encode, segs[mid:], policy, stats))
