"""The tokenize stage: ``enhanced/<shard>.tar`` -> ``tokens/<tokenizer>/<shard>.jsonl``.

torch and neucodec are imported inside :meth:`TokenizeStage.load`, which the worker calls once
per process after the fork; importing this module costs nothing.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from pathlib import Path
from typing import Any

from common.stages.contract import Stage, StageResult
from services.dedup.step import STEP as DEDUP
from services.speakers.step import STEP as SPEAKERS
from services.tokenize.dedup import DedupReader
from services.tokenize.loader import LoadedCodec
from services.tokenize.settings import TokenizeSettings
from services.tokenize.speakers import CorpusSpeakers
from services.tokenize.spec import SPEC
from services.tokenize.stats import FilterStats, SpeakersApplied, TokenizeStats

log = logging.getLogger(__name__)
# padding waste allowed per length-bucketed batch (docs/tokenize.md): 3 % costs little and
# lets a bucket close without waiting for a perfect fit
MAX_PADDING = 0.03


class TokenizeStage(Stage):
    name = "tokenize"
    settings: TokenizeSettings

    def __init__(self, settings: TokenizeSettings) -> None:
        super().__init__(settings)  # its section: the spec checked it (StageSpec.section)
        self.codec: LoadedCodec | None = None
        self.load_seconds = 0.0
        self._dedup = DedupReader()
        self._speakers = CorpusSpeakers()

    def load(self) -> None:
        if self.codec is not None:
            return
        from services.tokenize.loader import load_codec
        from services.tokenize.source import resolve_model_dir

        s = self.settings
        t0 = time.monotonic()
        directory = resolve_model_dir(s.tokenize_neucodec_model, s.tokenize_codec, s)
        self.codec = load_codec(directory, s.tokenize_codec, s.tokenize_device)
        self.load_seconds = time.monotonic() - t0
        log.info("tokenize: %s loaded from %s on %s in %.1f s", s.tokenize_codec, directory,
                 self.codec.device, self.load_seconds)

    @property
    def policy(self) -> str:
        """``auto``: both choices are exact; batching the acoustic convolutions pays on a GPU,
        while on a CPU the tail re-encode of ``stitched`` is pure overhead."""
        p = self.settings.tokenize_batching
        if p != "auto":
            return p
        return "stitched" if self.codec is not None and self.codec.device.startswith("cuda") \
            else "exact"

    def model_info(self) -> dict[str, Any]:
        import importlib.metadata as md

        c = self.codec
        return {
            "model": self.settings.tokenize_neucodec_model,
            "tokenizer": self.settings.tokenize_codec,
            "version": md.version("neucodec"),
            "device": c.device if c else None,
            "checkpoint_bytes": c.checkpoint_bytes if c else None,
            "semantic_layers": c.semantic_layers if c else None,
            "batching": self.policy,
        }

    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        from services.rules.policy import FilterPolicy
        from services.tokenize.encode import prepare
        from services.tokenize.flow import PipelineConfig, run_pipeline

        self.load()
        assert self.codec is not None
        s = self.settings
        key = SPEC.output_key(s, shard_id)
        out = workdir / "out" / Path(key).name
        policy = FilterPolicy.from_settings(s)
        # the dedup result, when the pipeline declares tokenize applies it
        if policy.duplicates and self.output_store is not None and DEDUP.name in self.applies:
            policy = policy.for_shard(self._dedup.load(self.output_store), shard_id)
        # the corpus speaker labels, when the pipeline declares tokenize carries them
        speakers = (self._speakers.labels(self.output_store, s, shard_id)
                    if self.output_store is not None and SPEAKERS.name in self.applies else None)
        cfg = PipelineConfig(policy=self.policy, batch_seconds=s.tokenize_batch_seconds,
                             max_batch=s.tokenize_max_batch, max_waste=MAX_PADDING,
                             window_seconds=s.tokenize_window_seconds,
                             max_member_bytes=s.max_member_bytes, quality_filter=policy,
                             speakers=speakers)
        st = run_pipeline(self.codec.model, self.codec.variant, inputs["enhanced"], out, cfg,
                          partial(prepare, self.codec.model, self.codec.variant), self.clock)
        waste = 0.0 if st.padded_frames == 0 else 1 - st.frames / st.padded_frames
        tally = st.skips.tally
        return StageResult(
            outputs={key: out},
            counts={"segments": st.segments, "tokenized": st.tokenized, "errors": st.errors,
                    "skipped": tally.segments, "tokens": st.tokens},
            audio_seconds_in=st.seconds_in,
            audio_seconds_out=st.seconds_out,
            extra=TokenizeStats(
                batches=st.batches,
                mean_batch=round(st.tokenized / st.batches, 2) if st.batches else 0.0,
                padding_waste=round(waste, 4),
                load_seconds=round(self.load_seconds, 2),
                errors_sample=st.error_samples,
                quality_filter=FilterStats(**policy.describe(),
                                           skipped_seconds=round(tally.seconds, 2),
                                           by_reason=tally.segments_by_reason),
                corpus_speakers=SpeakersApplied(applied=speakers is not None,
                                                labels=0 if speakers is None else len(speakers)),
                skipped=st.skips.entries, skipped_tally=tally,
            ).to_dict(),
        )
