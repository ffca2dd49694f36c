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
from services.enhance.settings import EnhanceSettings
from services.enhance.spec import SPEC
from services.enhance.stats import EnhanceStats, QualityStats

if TYPE_CHECKING:
    from services.dedup.spectrum import Powers
    from services.enhance.quality.annotate import Annotator

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
        from services.enhance.chain import NO_AUDIO, Chain, Item, Step, StreamStep
        from services.enhance.context import StepContext
        from services.enhance.early import EarlyFilter
        from services.enhance.recut import Recut
        from services.enhance.restore import Restore
        from services.enhance.segments import Conditioning, SegmentReader, read_plan
        from services.enhance.sides import SideOutput
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
        out_path.parent.mkdir(parents=True, exist_ok=True)
        ann = self._annotator
        # the steps the spec lists, each made for this shard (None: its settings turn it off)
        ctx = StepContext(s, b.in_rate, out_path.parent, ann, self._signature_powers, b, geom,
                          self.clock)
        made = [m for m in (cls.make(ctx) for cls in SPEC.load_steps()) if m is not None]
        for step in made:  # the models the stage loaded: each step checks its own
            step.load()
        front = [x for x in made if isinstance(x, StreamStep)]
        back = [x for x in made if isinstance(x, Step)]
        restore = next(x for x in front if isinstance(x, Restore))
        early = next((x for x in front if isinstance(x, EarlyFilter)), None)
        recut = next((x for x in back if isinstance(x, Recut)), None)
        sides = {x.name: x for x in back if isinstance(x, SideOutput)}
        side_keys = SPEC.side_outputs(s, shard_id) if SPEC.side_outputs is not None else {}
        writer = EnhancedWriter(out_path)
        # segments are gathered into batches only to be annotated together
        chain = Chain(back, writer, batch=s.quality_batch_segments if ann is not None else None,
                      batch_seconds=s.quality_batch_seconds,
                      ahead_seconds=s.enhance_write_ahead_seconds)

        def items() -> Iterator[Item]:
            m = geom.margin
            for seg in reader:  # the input a view: the engine drops only its own reference
                # the input either side (copies: the margin, for the music score's pauses)
                either = None if ann is None else (seg.padded[:m].copy(),
                                                   seg.padded[m + seg.seg_len:].copy())
                yield Item(seg, NO_AUDIO, seg.padded[m:m + seg.seg_len], either)

        quality_seconds0 = ann.seconds if ann is not None else 0.0
        try:
            stream: Iterable[Item] = items()
            for step in front:
                stream = step.run(stream)
            for item in stream:
                chain.put(item)
        except BaseException:
            chain.abort()
            raise
        chain.close()
        for name, k in side_keys.items():
            sides[name].write(workdir / "out" / k)
        errors = plan.errors + reader.errors
        # else the shard fails, nothing published
        check_written(plan, writer.durations, errors, recut.trimmed if recut else {},
                      early.dropped if early is not None else ())
        errors += chain.errors  # annotation failures: the segments were written all the same
        engine = restore.engine
        st = engine.stats
        counts = {
            "members": plan.members,
            "members_skipped": plan.skipped_members,  # dropped / errored / nothing kept
            "members_decoded": len(reader.decoded_keys),
            "segments_planned": plan.segments,
            "segments": writer.written,
            "segments_dropped_early": len(early.dropped) if early is not None else 0,
            "signatures": len(sides["signatures"]) if "signatures" in sides else 0,
            "speaker_embeddings": len(sides["speakers"]) if "speakers" in sides else 0,
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
            audio_seconds_in=restore.seconds_in,
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
                    **ctx.tally.as_dict(), seconds=round(ann.seconds - quality_seconds0, 3)),
                **(early.stats() if early is not None else {}),
            ).to_dict(),
        )

