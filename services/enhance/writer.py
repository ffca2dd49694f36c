"""Write behind: encode FLAC (24 kHz) and append to the output tar on a thread.

What waits for the thread is bounded in seconds of audio (``ahead_seconds``), not only in
segments: a queue of 30 s segments holds 30 times what one of 1 s segments does.

With an annotator (docs/quality.md), segments are gathered ``batch`` at a time (and at most
``batch_seconds`` of audio, which bounds the annotations' working memory) on the same
thread and annotated together (input and output audio, both already in memory) before they are
written; their sidecar gets a ``quality`` object. A batch whose annotation fails is written
without it and each of its segments gets an entry in ``errors``: the audio is never lost.
Each side output (``sides``: services/enhance/sides.py, the dedup signatures and the speaker
embeddings) hears of every segment written and every speaker label given, and ``close()``
writes its file after the tar.

With annotations, a segment that holds a speaker change is first cut there (``turns.py``: its
pieces are named ``<key>_<idx>-<part>``), and a source file's encoded segments are held until
the file is complete, to label its speakers (``speakers.py``: ``speaker_id`` in each sidecar),
then written in order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from common.node.allocator import give_back
from common.shards.audio import flac_bytes, resample
from common.shards.tar import ShardWriter
from common.shards.writebehind import WriteBehind
from services.dedup.fingerprint import RATE as TELEPHONE
from services.enhance.cuts import DEFAULT_CUTS, CutSettings, segment_pieces
from services.enhance.edges import fires
from services.enhance.errors import SegmentError
from services.enhance.quality import overlap
from services.enhance.resampled import Resampled
from services.enhance.segments import CutSegment, SegmentSpec
from services.enhance.sides import SideOutput
from services.enhance.speakers import (
    FUSED,
    RESEMBLYZER,
    UNKNOWN_NEAR,
    HeldSegments,
    SpeakerLabeller,
    label_embedding,
)
from services.enhance.turns import MIN_PIECE, Piece, cut_segment
from services.records import Sidecar, segment_id

if TYPE_CHECKING:
    from services.enhance.quality.annotate import Annotator
    from services.enhance.quality.records import QualityRecord

log = logging.getLogger(__name__)

OUT_RATE = 24000


class EnhancedWriter:
    """``put(segment, audio at rate)`` in output order; ``close()`` publishes the tar whole."""

    def __init__(self, path: Path, rate: int, ahead: int = 8, annotator: Annotator | None = None,
                 in_rate: int = 0, batch: int = 16,
                 speaker_threshold: float | None = None, batch_seconds: float = 120.0,
                 ahead_seconds: float = 60.0, cuts: CutSettings | None = DEFAULT_CUTS,
                 sides: Sequence[tuple[SideOutput, Path]] = (),
                 speaker_unknown_near: float = UNKNOWN_NEAR) -> None:
        self.rate = rate
        self.sides = list(sides)  # the side outputs and their files (sides.py)
        self._writer = ShardWriter(path)
        self.written = 0
        self.seconds_out = 0.0
        self.annotator = annotator
        self.cuts = cuts  # None: segments are not cut at changes (trim_window 0: not trimmed)
        self.trimmed: dict[str, float] = {}  # segment -> seconds trimmed off its pieces
        # serial -> what was found on its input before restoration (early.py: its music
        # score, its overlap frames): not found again
        self.known: dict[int, dict[str, Any]] = {}
        self.in_rate = in_rate
        self.batch = max(1, batch)
        self.batch_samples = batch_seconds * OUT_RATE
        self._pending: list[tuple[CutSegment, np.ndarray, np.ndarray | None]] = []
        # serial -> (its start, the input before it, its input, the input after it): the
        # music score looks in the file's pauses around a segment or a piece cut out of one
        self._around: dict[int, tuple[float, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.errors: list[SegmentError] = []
        self.quality = QualityTally()
        self.durations: list[tuple[SegmentSpec, float]] = []  # what was written, for the check
        # held in the stage's scratch, not /tmp
        self._held: HeldSegments[CutSegment, Sidecar] = HeldSegments(directory=path.parent)
        # CAM++'s embeddings beside Resemblyzer's when the annotator has the model
        profile = FUSED if annotator is not None and annotator.label_model is not None \
            else RESEMBLYZER
        self.labeller: SpeakerLabeller[int] = SpeakerLabeller(
            self._emit, speaker_threshold, speaker_unknown_near, profile)
        # the last partial batch is annotated and written at the end, then the last file
        self._behind: WriteBehind[tuple[CutSegment, np.ndarray, np.ndarray | None]] = \
            WriteBehind(self._take, ahead, name="enhance-write", finish=self._finish,
                        weight=lambda item: item[1].size / OUT_RATE, capacity=ahead_seconds)

    def to_out_rate(self, audio: np.ndarray) -> np.ndarray:
        """A restored segment at ``rate`` -> at 24 kHz, what :meth:`put` takes. The engine calls
        it as soon as a segment is finished, so what then waits (for earlier segments, in the
        write-behind queue, in the annotation batch) holds half the samples of a 48 kHz model's
        output; the annotations resample from 24 kHz (all they use is below 8 kHz)."""
        return resample(audio, self.rate, OUT_RATE)

    def put(self, seg: CutSegment, audio: np.ndarray, before: np.ndarray | None = None,
            around: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """``audio`` at 24 kHz (:meth:`to_out_rate`); ``before``: the segment's input at
        ``in_rate`` (for the annotations and the signature), if any; ``around``: the input
        just before and after it (the music score looks in the file's pauses there too)."""
        if around is not None and before is not None and self.annotator is not None:
            self._around[seg.serial] = (seg.spec.start, around[0], before, around[1])
        self._behind.put((seg, audio, before))

    def _take(self, item: tuple[CutSegment, np.ndarray, np.ndarray | None]) -> None:
        if self.annotator is None:
            self._write(item[0], item[1], None, item[2])
            return
        if self._pending and (sum(a.size for _, a, _ in self._pending) + item[1].size
                              > self.batch_samples):
            self._flush()  # the batch would run past its seconds: it goes without this one
        self._pending.append(item)
        if len(self._pending) >= self.batch:
            self._flush()

    def _finish(self) -> None:
        self._flush()
        self.labeller.flush()
        self.quality.speaker_files = self.labeller.files
        self.quality.speakers = self.labeller.speakers

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        records: Sequence[QualityRecord | None] = [None] * len(batch)
        rs = Resampled()  # the batch's clips at the rates its steps share
        try:
            batch, frames, known = self._cut_turns(batch, rs)
            records = [None] * len(batch)
            records = self._annotate(batch, frames, known, rs)
        except Exception as e:
            log.exception("quality annotation failed for %d segments", len(batch))
            reason = f"quality:{type(e).__name__}:{str(e)[:120]}"
            self.errors += [{"key": _seg_id(seg), "reason": reason} for seg, _, _ in batch]
        for (seg, audio, before), rec in zip(batch, records):
            self._around.pop(seg.serial, None)
            self._write(seg, audio, rec, before, rs)
        # the batch's activations (DNSMOS, the speaker LSTM, the fidelity decode) are freed now;
        # what the heaps keep of them goes back (a 3-hour member's peak: -52 MB)
        give_back()

    def _cut_turns(self, batch: list[Item], rs: Resampled | None = None,
                   ) -> tuple[list[Item], list[overlap.Frames | None], list[dict[str, Any]]]:
        """The batch with each segment that holds a speaker change replaced by its pieces, and
        each piece's edges trimmed where two voices sound at once (``edges.py``); with each
        item, the overlap frames of its input where they were found (its segment's, clipped to
        the piece: the overlap annotation is taken from them, not found again), and the fields
        found on its input before restoration (none for a piece: its input is another)."""
        rs = rs or Resampled()
        # the frames found before restoration (``known``), else found here or by the annotation
        fields = [self.known.pop(seg.serial, {}) for seg, _, _ in batch]
        known: list[overlap.Frames | None] = [f.pop("overlap_frames", None) for f in fields]
        found: list[overlap.Frames | None] = list(known)
        todo = [i for i, (seg, audio, _) in enumerate(batch)
                if self.cuts is not None and seg.spec.words
                and len(seg.spec.words) > 1 and audio.size > 2 * MIN_PIECE * OUT_RATE]
        if not todo or self.cuts is None:
            return batch, found, fields
        cfg = self.cuts
        assert self.annotator is not None  # segments are batched only to be annotated
        wins = self.annotator.speaker.windows([rs(batch[i][1], OUT_RATE, 16000) for i in todo])
        out = list(batch)
        trimmed: dict[str, float] = {}  # kept only if the whole batch is cut (else written whole)
        for i, w in reversed(list(zip(todo, wins))):
            seg, audio, before = batch[i]
            frames = None
            # on the input, as the overlap annotation is
            src, rate = (before, self.in_rate) if before is not None else (audio, OUT_RATE)
            if cfg.needs_fires:
                frames = known[i] if known[i] is not None else \
                    self.annotator.overlap.frames(src, rate, rs)
            parts, kept = segment_pieces(seg.spec, w, None if frames is None else fires(frames),
                                         cfg)
            if len(parts) > 1:
                self.quality.cut_segments += 1
                self.quality.speaker_changes += len(parts) - 1
            if kept != parts:
                self._count_trim(seg, parts, kept, trimmed)
            if len(kept) > 1 or kept != parts:
                cut = cut_segment(seg, audio, OUT_RATE, before, self.in_rate, kept)
                out[i:i + 1] = cut
                fields[i:i + 1] = [{} for _ in cut]
                found[i:i + 1] = [None if frames is None else frames.clip(
                    round(p.start * rate) / rate, (a if b is None else b).size / rate)
                    for p, (_, a, b) in zip(kept, cut)]
            else:
                found[i] = frames if frames is not None else known[i]
        self.trimmed.update(trimmed)
        return out, found, fields

    def _count_trim(self, seg: CutSegment, parts: list[Piece], kept: list[Piece],
                    trimmed: dict[str, float]) -> None:
        s = seg.spec
        trimmed[segment_id(s.key, s.idx)] = (sum(p.end - p.start for p in parts)
                                                  - sum(p.end - p.start for p in kept))
        self.quality.overlap_trimmed += sum(p not in parts for p in kept)
        self.quality.overlap_dropped += len(parts) - len(kept)
        self.quality.overlap_trimmed_words += (sum(len(p.words) for p in parts)
                                               - sum(len(p.words) for p in kept))

    def _annotate(self, batch: list[Item], frames: list[overlap.Frames | None],
                  known: list[dict[str, Any]], rs: Resampled) -> list[QualityRecord]:
        from services.enhance.quality.annotate import AnnotationInput

        items = [AnnotationInput(_seg_id(seg), seg.spec.text, seg.spec.language,
                                 before if before is not None else audio,
                                 self.in_rate if before is not None else OUT_RATE,
                                 audio, OUT_RATE, f, self._around_of(seg, before), k)
                 for (seg, audio, before), f, k in zip(batch, frames, known)]
        assert self.annotator is not None  # segments are batched only to be annotated
        return self.annotator.annotate(items, rs)

    def _around_of(self, seg: CutSegment, before: np.ndarray | None,
                   ) -> tuple[np.ndarray, np.ndarray] | None:
        """The input either side of a segment, or of a piece cut out of one (the rest of its
        segment there, then the file's), as much as the segment's margin."""
        got = self._around.get(seg.serial)
        if got is None or before is None:
            return None
        start, left, whole, right = got
        m = left.size
        a = m + round((seg.spec.start - start) * self.in_rate)
        b = a + before.size
        full = np.concatenate([left, whole, right])
        return full[max(0, a - m):a].copy(), full[b:b + m].copy()

    def _write(self, seg: CutSegment, audio: np.ndarray, quality: QualityRecord | None,
               before: np.ndarray | None = None, rs: Resampled | None = None) -> None:
        out = audio  # already at OUT_RATE (put)
        s = seg.spec
        seconds = round(out.size / OUT_RATE, 3)
        meta = Sidecar(text=s.text, language=s.language, source_key=s.key,
                       start=round(s.start, 3), end=round(s.end, 3), duration_seconds=seconds,
                       quality=None if quality is None else quality.to_record(),
                       min_word_probability=s.min_word_probability, **s.forms.fields())
        if quality is not None:
            self.quality.add(quality)
        flac = flac_bytes(out, OUT_RATE)
        self.seconds_out += out.size / OUT_RATE
        if self.sides:
            src, rate = (before, self.in_rate) if before is not None and self.in_rate else (
                out, OUT_RATE)
            # at 8 kHz, as the overlap frames took it (the same call on the same samples)
            x8 = rs(src, rate, TELEPHONE) if rs is not None and src.dtype == np.float32 else None
            ovrl = None if quality is None else round(float(quality.dnsmos_after.ovrl), 4)
            for side, _ in self.sides:
                side.written(_seg_id(seg), s, meta, ovrl, src, rate, x8)
        if self.annotator is None:
            self._emit((seg, flac, meta), None)
            return
        embedding = None if quality is None else label_embedding(quality)
        # held without its audio (``padded``: the input at 48 kHz): only its name is needed
        held = replace(seg, padded=_NO_AUDIO)
        self.labeller.put(s.key, embedding, self._held.hold(held, flac, meta),
                          None if quality is None else quality.speaker_parts)

    def _emit(self, item: int | Encoded, speaker_id: str | None) -> None:
        """``item``: a held segment's ticket, or the segment itself when nothing is held."""
        seg, flac, meta = self._held.take(item) if isinstance(item, int) else item
        if speaker_id is not None:
            meta = meta.model_copy(update={"speaker_id": speaker_id})
            for side, _ in self.sides:
                side.labelled(_seg_id(seg), speaker_id, meta)
        assert meta.duration_seconds is not None  # _write gives every sidecar its duration
        self._writer.write(_seg_id(seg), {"flac": flac, "json": meta.to_json().encode("utf-8")})
        self.written += 1
        self.durations.append((seg.spec, meta.duration_seconds))

    def close(self) -> None:
        try:
            self._behind.join()
        except BaseException:
            self._writer.abort()
            raise
        finally:
            self._held.close()
        self._writer.close()
        for side, side_path in self.sides:
            side.write(side_path)

    def abort(self) -> None:
        self._behind.abort()  # what is pending is dropped
        self._writer.abort()
        self._held.close()


_NO_AUDIO = np.zeros(0, np.float32)
Item = tuple[CutSegment, np.ndarray, "np.ndarray | None"]  # a segment, its output, its input
Encoded = tuple[CutSegment, bytes, Sidecar]  # a segment, its FLAC, its sidecar


def _seg_id(seg: CutSegment) -> str:
    return segment_id(seg.spec.key, seg.spec.idx, seg.spec.part)


class QualityTally:
    """Shard totals of the annotations, for the done record."""

    def __init__(self) -> None:
        self.annotated = 0
        self.multi_speaker = 0
        self.fidelity_checked = 0
        self.changed_text = 0
        self.ovrl_before = 0.0
        self.ovrl_after = 0.0
        self.speaker_files = 0  # source files whose segments were labelled
        self.speakers = 0  # labels given, all files together
        self.cut_segments = 0  # asr segments cut at speaker changes
        self.speaker_changes = 0  # cuts made (pieces written less the segments cut)
        self.overlap_trimmed = 0  # pieces whose edges were trimmed where two voices overlap
        self.overlap_dropped = 0  # pieces nothing was left of
        self.overlap_trimmed_words = 0  # asr words trimmed with them

    def add(self, rec: QualityRecord) -> None:
        self.annotated += 1
        self.multi_speaker += bool(rec.multi_speaker)
        self.fidelity_checked += rec.fidelity_cer is not None
        self.changed_text += bool(rec.restoration_changed_text)
        self.ovrl_before += rec.dnsmos_before.ovrl
        self.ovrl_after += rec.dnsmos_after.ovrl

    def as_dict(self) -> dict[str, Any]:
        n = max(self.annotated, 1)
        return {"annotated": self.annotated, "multi_speaker": self.multi_speaker,
                "fidelity_checked": self.fidelity_checked,
                "restoration_changed_text": self.changed_text,
                "mean_ovrl_before": round(self.ovrl_before / n, 3),
                "mean_ovrl_after": round(self.ovrl_after / n, 3),
                "speaker_files": self.speaker_files, "speakers": self.speakers,
                "cut_segments": self.cut_segments, "speaker_changes": self.speaker_changes,
                "overlap_trimmed": self.overlap_trimmed,
                "overlap_dropped": self.overlap_dropped,
                "overlap_trimmed_words": self.overlap_trimmed_words}
