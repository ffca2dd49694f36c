"""The enhance stage: the kept ASR segments of a shard, restored, as 24 kHz FLAC + JSON in a tar.

Threads overlap the work: the reader decodes and cuts the next segments, a helper prepares the
next batch's features, the model runs, and the writer resamples, encodes and appends behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.ledger.stats import ErrorEntry
from common.stages.contract import Stage, StageResult
from services.enhance.backend import Backend
from services.enhance.backends import make_backend
from services.enhance.chunking import ChunkGeometry
from services.enhance.cuts import CutSettings
from services.enhance.settings import EnhanceSettings
from services.enhance.spec import SPEC
from services.enhance.stats import EnhanceStats, QualityStats
from services.rules.policy import FilterPolicy

if TYPE_CHECKING:
    import numpy as np

    from services.dedup.spectrum import Powers
    from services.enhance.quality.annotate import Annotator
    from services.enhance.segments import CutSegment

log = logging.getLogger(__name__)

MAX_ERRORS_RECORDED = 100


class EnhanceStage(Stage):
    name = "enhance"
    settings: EnhanceSettings

    def __init__(self, settings: EnhanceSettings) -> None:
        super().__init__(settings)  # its section: the spec checked it (StageSpec.section)
        self._backend: Backend | None = None
        self._annotator: Annotator | None = None
        self._signature_powers: Powers | None = None

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = make_backend(self.settings)
        return self._backend

    def load(self) -> None:
        self.backend.load()
        if self.settings.quality_annotations and self._annotator is None:
            self._annotator = self._load_annotator()
        if self._signature_powers is None:
            self._signature_powers = self._load_signature_powers()

    def _load_signature_powers(self) -> Powers:
        """The dedup signature's spectrograms on the stage's GPU when it has one (its FFTs
        are then off the node's CPU), else in numpy."""
        from common.models.device import resolve_device, torch_cuda_available
        from services.dedup.spectrum import numpy_powers
        from services.enhance.signature_powers import DevicePowers

        device = resolve_device(self.settings.enhance_device, "ONSEI_ENHANCE_DEVICE",
                                torch_cuda_available)
        return DevicePowers(device) if device.startswith("cuda") else numpy_powers

    def _load_annotator(self) -> Annotator:
        """All annotation models now, so a missing one fails the worker at once
        (docs/quality.md)."""
        from common.models.device import resolve_device, torch_cuda_available
        from services.enhance.quality.annotate import Annotator

        device = resolve_device(self.settings.enhance_device, "ONSEI_ENHANCE_DEVICE",
                                torch_cuda_available)
        ann = Annotator(self.settings, device)
        ann.load()
        if self.settings.quality_fidelity_fraction > 0:
            ann.fidelity.warm()
        return ann

    def model_info(self) -> dict[str, Any]:
        info = self.backend.info()
        if self._annotator is not None:
            info = {**info, "quality": self._annotator.info()}
        return {"model": info.get("enhancer"), "version": info.get("enhancer_version"), **info}

    def geometry(self) -> ChunkGeometry:
        s, b = self.settings, self.backend
        return ChunkGeometry.from_seconds(b.in_rate, s.enhance_chunk_seconds,
                                          s.enhance_context_seconds,
                                          s.enhance_crossfade_seconds, b.hop)

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        from services.enhance.early import EarlyFilter, SegmentInput
        from services.enhance.flow import Enhancer
        from services.enhance.segments import Conditioning, SegmentReader, read_plan
        from services.enhance.sides import Signatures, SpeakerEmbeddings
        from services.enhance.verify import check_written
        from services.enhance.writer import EnhancedWriter

        self.load()
        s, b = self.settings, self.backend
        plan = read_plan(inputs["asr"], s.max_member_seconds, name=self.input_keys.get("asr"))
        geom = self.geometry()
        reader = SegmentReader(inputs["shard"], plan, b.in_rate, geom.margin,
                               Conditioning(b.in_rate, b.peak, b.highpass_hz),
                               max_member_bytes=s.max_member_bytes,
                               max_seconds=s.max_member_seconds,
                               max_sidecar_bytes=s.max_sidecar_bytes,
                               ahead_seconds=s.enhance_read_ahead_seconds)
        key = SPEC.output_key(s, shard_id)
        out_path = workdir / "out" / key
        ann = self._annotator
        # the side outputs the spec names, each its step (sides.py), written after the tar
        made = {"signatures": Signatures(self._signature_powers),
                "speakers": SpeakerEmbeddings()}
        side_keys = SPEC.side_outputs(s, shard_id) if SPEC.side_outputs is not None else {}
        sides = [(made[name], workdir / "out" / k) for name, k in side_keys.items()]
        writer = EnhancedWriter(out_path, b.out_rate, annotator=ann, in_rate=b.in_rate,
                                batch=s.quality_batch_segments, sides=sides,
                                speaker_threshold=s.quality_speaker_label_threshold,
                                speaker_unknown_near=s.quality_speaker_unknown_near,
                                cuts=CutSettings(
                                    s.quality_speaker_change_threshold,
                                    s.quality_speaker_change_gap_threshold,
                                    s.quality_overlap_trim_seconds, s.quality_overlap_cuts,
                                ) if s.quality_speaker_changes else None,
                                batch_seconds=s.quality_batch_seconds,
                                ahead_seconds=s.enhance_write_ahead_seconds)
        engine = Enhancer(b, geom, s.enhance_batch_size, s.enhance_pack_rounds, self.clock,
                          finish=writer.to_out_rate)
        inputs_kept: dict[int, np.ndarray] = {}  # serial -> input audio: annotations, signatures
        # the filter rules on the input audio, before the model: only with the annotations
        # (their models compute the fields; without them no rule reads a field at all)
        early = EarlyFilter(FilterPolicy.from_settings(s), ann) if ann is not None else None
        # serial -> the input either side (copies: the margin, for the music score's pauses)
        around: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def keep_inputs(segments: Iterable[CutSegment]) -> Iterator[CutSegment]:
            m = geom.margin
            for seg in segments:  # a view: the engine drops only its own reference
                before = seg.padded[m:m + seg.seg_len]
                either = (seg.padded[:m].copy(), seg.padded[m + seg.seg_len:].copy())
                if early is not None:
                    if not early.keeps(seg.spec, SegmentInput(before, b.in_rate, either)):
                        continue  # dropped before restoration: the done record says why
                    if early.found:  # not found again after restoration
                        writer.known[seg.serial] = early.found
                inputs_kept[seg.serial] = before
                if ann is not None:
                    around[seg.serial] = either
                yield seg

        seconds_in = 0.0
        quality_seconds0 = ann.seconds if ann is not None else 0.0
        try:
            for seg, audio in engine.run(keep_inputs(reader)):
                seconds_in += seg.seg_len / b.in_rate
                writer.put(seg, audio, inputs_kept.pop(seg.serial, None),
                           around.pop(seg.serial, None))
        except BaseException:
            writer.abort()
            raise
        writer.close()
        errors = plan.errors + reader.errors
        # else the shard fails, nothing published
        check_written(plan, writer.durations, errors, writer.trimmed,
                      early.dropped if early is not None else ())
        errors += writer.errors  # annotation failures: the segments were written all the same
        st = engine.stats
        counts = {
            "members": plan.members,
            "members_skipped": plan.skipped_members,  # dropped / errored / nothing kept
            "members_decoded": len(reader.decoded_keys),
            "segments_planned": plan.segments,
            "segments": writer.written,
            "segments_dropped_early": len(early.dropped) if early is not None else 0,
            "signatures": len(made["signatures"]),
            "speaker_embeddings": len(made["speakers"]),
            "errors": len(errors),
            "chunks": engine.chunks,
            "rows": st.rows,
            "batches": st.batches,
        }
        if errors:
            log.warning("enhance %s: %d errors, first: %s", shard_id, len(errors), errors[0])
        return StageResult(
            outputs={key: out_path, **{k: workdir / "out" / k for k in side_keys.values()}},
            counts=counts,
            audio_seconds_in=seconds_in,
            audio_seconds_out=writer.seconds_out,
            extra=EnhanceStats(
                padded_fraction=round(st.padded_fraction, 5),
                overhead_fraction=round(st.overhead_fraction, 5),
                decode_seconds=round(reader.decode_seconds, 3),
                chunk_seconds=geom.chunk / b.in_rate,
                context_seconds=geom.context / b.in_rate,
                batch_size=s.enhance_batch_size,
                errors=[ErrorEntry(**e) for e in errors[:MAX_ERRORS_RECORDED]],
                quality=None if ann is None else QualityStats(
                    **writer.quality.as_dict(), seconds=round(ann.seconds - quality_seconds0, 3)),
                **(early.stats() if early is not None else {}),
            ).to_dict(),
        )
