"""The ``onsei speakers`` settings section (docs/speakers.md): same ``ONSEI_*`` names and YAML
keys as every other setting."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from common.settings import Settings


class SpeakersSettings(Settings):
    prefixes: ClassVar[tuple[str, ...]] = ("speakers_",)

    speakers_link_threshold: float = Field(
        0.8, gt=0.0, lt=1.0, description="cosine between a file's speaker (the mean of its "
        "segments' embeddings) and a corpus speaker's centroid at or above which they are one "
        "voice (docs/speakers.md has how it was chosen)")
    speakers_memory_limit_mb: int = Field(
        8192, ge=64, le=1 << 22, description="the index of corpus speakers and one batch's "
        "embeddings held at once; a run that would pass it stops, naming it")
    speakers_index_dtype: Literal["f32", "bf16", "f16"] = Field(
        "bf16", description="how the index stores a centroid's 256 values (bf16: cosines to "
        "~0.004, the fastest measured; docs/speakers.md, Scale)")
    speakers_threads: int = Field(0, ge=0, le=1024, description="index threads (0: every core)")
    speakers_batch_shards: int = Field(
        256, ge=1, le=100_000, description="shards linked and published together")
    speakers_workdir: str = Field(
        "", description="local directory of the index cache (empty: "
        "<scratch_dir>/onsei-speakers)")
