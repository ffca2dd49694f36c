"""What to enhance (the ASR JSONL) and the cut segments themselves, decoded ahead on a thread.

Only members whose ASR line has status ``ok`` and at least one kept segment are decoded; every
other member of the raw shard is skipped unread (its bytes pass through the tar reader only).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.shards.audio import AudioError, decode_chunks
from common.shards.members import LEAVE_IN_TAR_BYTES, iter_keys
from common.shards.readahead import read_ahead
from common.shards.slice import MemberSlice
from services.enhance.errors import SegmentError
from services.enhance.highpass import highpass_zero_phase
from services.records import AsrLine, RecordError, Word
from services.text.forms import TextForms


@dataclass
class SegmentSpec:
    key: str
    idx: int
    start: float
    end: float
    text: str
    language: str | None
    min_word_probability: float | None = None  # the asr segment's, passed to the sidecar
    words: list[Word] | None = None  # the asr segment's, times in the member (turns.py)
    part: int | None = None  # the segment cut at speaker changes: its piece, from 1 (turns.py)
    forms: TextForms = field(default_factory=TextForms)  # text_spoken & co (services/text)


@dataclass
class Plan:
    by_key: dict[str, list[SegmentSpec]] = field(default_factory=dict)
    members: int = 0  # lines in the ASR JSONL
    skipped_members: int = 0  # dropped / errored / nothing kept: never decoded
    errors: list[SegmentError] = field(default_factory=list)

    @property
    def segments(self) -> int:
        return sum(len(v) for v in self.by_key.values())


class AsrInputError(ValueError):
    """The asr JSONL contradicts itself or its audio (a key twice, a time out of bounds, a
    number that is not finite): the shard fails with this reason, nothing is cut."""


def read_plan(asr_jsonl: Path, max_seconds: float | None = None, name: str | None = None) -> Plan:
    """Parse the ASR JSONL. A line that does not parse is an error record (the output check then
    fails the shard, naming it); a key ``ok`` on two lines, or an ``ok`` line whose times are out
    of bounds (``services.records.asr_line_problem``), fails it at once (:class:`AsrInputError`,
    naming the line of ``name``: the JSONL's key in the output)."""
    from services.records import asr_line_problem

    plan = Plan()
    first_ok: dict[str, int] = {}  # key -> its ok line: one a key, as asr writes them
    with open(asr_jsonl, encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            if not text.strip():
                continue
            plan.members += 1
            try:
                line = AsrLine.from_json(text)
            except RecordError as e:
                plan.errors.append({"key": None, "reason": f"asr_line_{n}_malformed: {e}"[:200]})
                continue
            if not line.ok:  # asr may add error lines for a key it transcribed (a bad sidecar)
                plan.skipped_members += 1
                continue
            where = f"{name or asr_jsonl.name} line {n} (key {line.key!r})"
            if line.key in first_ok:
                raise AsrInputError(f"{where}: the key is ok on line {first_ok[line.key]} too")
            first_ok[line.key] = n
            problem = asr_line_problem(line, max_seconds)
            if problem is not None:
                raise AsrInputError(f"{where}: {problem}"[:300])
            kept = [SegmentSpec(line.key, s.idx, float(s.start), float(s.end), s.text,
                                s.language or line.language, s.min_word_probability,
                                s.words, forms=TextForms.of(s)) for s in line.kept]
            if kept:
                plan.by_key[line.key] = sorted(kept, key=lambda s: s.start)
            else:
                plan.skipped_members += 1
    return plan


@dataclass
class CutSegment:
    serial: int  # consecutive over the shard's written segments: the output order
    spec: SegmentSpec
    seg_len: int  # samples at the backend's input rate
    padded: np.ndarray  # the segment with ``margin`` samples of real audio (or zeros) around


@dataclass
class Conditioning:
    """Per-segment input conditioning a backend asks for (Sidon: peak 0.9, 50 Hz high-pass)."""

    rate: int
    peak: float | None = None
    highpass_hz: float | None = None

    def apply(self, x: np.ndarray) -> np.ndarray:
        if self.highpass_hz and x.size > 15:
            x = highpass_zero_phase(x, self.highpass_hz, self.rate, order=2)
        if self.peak:
            m = float(np.max(np.abs(x))) if x.size else 0.0
            if m > 1e-6:
                x = (x * (self.peak / m)).astype(np.float32)
        return x


class SegmentReader:
    """Streams the raw shard on a read-ahead thread (common/shards/readahead.py), decodes
    planned members, yields cut segments in order.

    ``errors`` collects ``{key, reason}`` for planned members that are missing or undecodable.
    A shard-level failure (truncated tar) is re-raised in the consumer.
    """

    def __init__(self, shard: Path, plan: Plan, rate: int, margin: int, cond: Conditioning,
                 max_member_bytes: int | None = None, max_seconds: float | None = None,
                 ahead: int = 16, max_sidecar_bytes: int | None = None,
                 ahead_seconds: float = 60.0) -> None:
        self.shard, self.plan, self.rate, self.margin, self.cond = shard, plan, rate, margin, cond
        self.max_member_bytes, self.max_seconds = max_member_bytes, max_seconds
        self.max_sidecar_bytes = max_sidecar_bytes  # the limits asr read with: same outcomes
        self.ahead, self.ahead_seconds = ahead, ahead_seconds
        self.errors: list[SegmentError] = []
        self.decoded_keys: list[str] = []
        self.decode_seconds = 0.0

    def __iter__(self) -> Iterator[CutSegment]:
        return read_ahead(self._cut_all(), self.ahead, name="enhance-decode",
                          weight=lambda seg: seg.padded.size / self.rate,
                          capacity=self.ahead_seconds)

    def _cut_all(self) -> Iterator[CutSegment]:
        serial = 0
        seen: set[str] = set()
        for k in iter_keys(self.shard, self.max_member_bytes,
                           max_sidecar_bytes=self.max_sidecar_bytes,
                           leave_from=LEAVE_IN_TAR_BYTES):
            specs = self.plan.by_key.get(k.key) if k.key is not None else None
            if not specs or k.key is None or k.key in seen:
                continue  # not planned (dropped, errored, nothing kept): never decoded
            seen.add(k.key)
            if k.error is not None:  # asr decided otherwise: the check fails the shard
                self.errors.append({"key": k.key, "reason": f"error:{k.error}"})
                continue
            self.decoded_keys.append(k.key)
            for spec, length, padded in self._cut(k.key, k.audio, specs):
                yield CutSegment(serial, spec, length, padded)
                serial += 1
        for key in self.plan.by_key:
            if key not in seen:
                self.errors.append({"key": key, "reason": "missing_member"})

    def _cut(self, key: str, data: bytes | MemberSlice,
             specs: list[SegmentSpec]) -> Iterator[tuple[SegmentSpec, int, np.ndarray]]:
        """Decode ``data`` in a stream and cut its segments as their audio (and margin) arrives:
        only the audio from the next segment's start on is held, never the whole member."""
        window = RollingAudio()
        todo = list(specs)  # sorted by start (read_plan)
        chunks = decode_chunks(data, self.rate, max_seconds=self.max_seconds)
        try:
            while True:
                t0 = time.monotonic()
                try:
                    chunk = next(chunks, None)
                finally:
                    self.decode_seconds += time.monotonic() - t0
                if chunk is None:
                    break
                if not np.isfinite(chunk).all():  # asr refuses these too: never cut
                    self.errors.append({"key": key, "reason": "error:non_finite_samples"})
                    return
                window.extend(chunk)
                while todo and window.end >= round(todo[0].end * self.rate) + self.margin:
                    yield from self._emit(key, todo.pop(0), window)
                if todo:
                    window.drop_before(round(todo[0].start * self.rate) - self.margin)
        except AudioError as e:
            self.errors.append({"key": key, "reason": f"error:{e.reason}"})
            return
        finally:
            # decode_chunks is a generator, declared as an Iterator in common/shards/audio.py
            chunks.close()  # type: ignore[attr-defined]
        if window.end == 0:
            self.errors.append({"key": key, "reason": "error:empty"})
            return
        for spec in todo:  # their audio runs to the file's end
            yield from self._emit(key, spec, window)

    def _emit(self, key: str, spec: SegmentSpec,
              window: RollingAudio) -> Iterator[tuple[SegmentSpec, int, np.ndarray]]:
        a = round(spec.start * self.rate)
        b = min(round(spec.end * self.rate), window.end)
        if b - a < self.rate // 100:  # < 10 ms left inside the file
            self.errors.append({"key": key, "reason": f"segment_outside_audio:{spec.idx}"})
            return
        yield spec, b - a, self.cond.apply(window.padded(a, b, self.margin))


class RollingAudio:
    """The decoded samples of one member from ``start`` to ``end`` (absolute sample indices),
    as the chunks that came; earlier ones are dropped once no segment needs them."""

    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.start = 0  # absolute index of chunks[0][0]
        self.end = 0

    def extend(self, chunk: np.ndarray) -> None:
        if chunk.size:
            self.chunks.append(chunk)
            self.end += chunk.size

    def drop_before(self, index: int) -> None:
        while self.chunks and self.start + self.chunks[0].size <= index:
            self.start += self.chunks.pop(0).size

    def padded(self, a: int, b: int, margin: int) -> np.ndarray:
        """``audio[a - margin : b + margin]`` of the whole member, zeros outside the file (as
        :func:`pad_segment`); the held chunks must cover what of it lies inside the file."""
        lo, hi = a - margin, b + margin
        out = np.zeros(hi - lo, dtype=np.float32)
        pos = self.start
        for c in self.chunks:
            s, e = max(lo, pos), min(hi, pos + c.size)
            if e > s:
                out[s - lo:e - lo] = c[s - pos:e - pos]
            pos += c.size
            if pos >= hi:
                break
        if max(lo, 0) < self.start:
            raise AssertionError(f"audio before sample {self.start} was dropped, {lo} needed")
        return out
