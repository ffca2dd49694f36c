"""The ``onsei dedup`` settings section (docs/dedup.md): same ``ONSEI_*`` names and YAML keys as
every other setting."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from common.settings import Settings


class DedupSettings(Settings):
    prefixes: ClassVar[tuple[str, ...]] = ("dedup_",)

    dedup_memory_limit_mb: int = Field(
        4096, ge=256, le=1 << 22, description="DuckDB memory limit of the index; it spills to "
        "dedup_workdir past it")
    dedup_threads: int = Field(0, ge=0, le=1024, description="DuckDB threads (0: every core)")
    dedup_workdir: str = Field(
        "", description="local directory of the index cache and downloaded signatures "
        "(empty: <scratch_dir>/onsei-dedup)")
    dedup_confirm_workers: int = Field(
        0, ge=0, le=1024, description="processes comparing fingerprints of candidate pairs "
        "(0: one per core; 1: in the dedup process)")
    dedup_max_ber: float = Field(
        0.30, gt=0.0, lt=0.5, description="fingerprint bit error rate at or below which two "
        "segments are the same recording (unrelated audio: ~0.5)")
    dedup_min_overlap: float = Field(
        0.5, gt=0.0, le=1.0, description="aligned overlap needed, share of the shorter segment")
    dedup_max_shift_seconds: float = Field(
        2.0, ge=0.0, le=30.0, description="alignments searched either way (moved boundaries)")
    dedup_duration_slack_seconds: float = Field(
        1.5, ge=0.0, le=60.0, description="candidates differ in duration by at most this plus "
        "dedup_duration_slack_fraction of the shorter")
    dedup_duration_slack_fraction: float = Field(
        0.25, ge=0.0, le=10.0, description="the part of the candidates' duration slack that "
        "grows with the shorter segment (see dedup_duration_slack_seconds)")
    dedup_acoustic_keys: bool = Field(
        True, description="propose candidates from the audio's landmark keys as well as the "
        "text's (finds copies transcribed differently; applies to shards indexed from then on)")
    dedup_short_keys: bool = Field(
        True, description="segments of 3 s or less also propose candidates from their short "
        "audio-key family (finds their cut and padded copies; costs confirmation time growing "
        "with the square of their count: docs/dedup.md, Scale)")
    dedup_max_bucket: int = Field(
        10000, ge=2, le=10_000_000, description="a key shared by more segments than this "
        "proposes no candidates (a stock phrase said by thousands of speakers)")
    dedup_batch_shards: int = Field(
        64, ge=1, le=100_000, description="shards indexed and published together")
