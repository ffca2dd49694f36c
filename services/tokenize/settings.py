"""The tokenize stage's settings section (its spec names it): the codec, batching, and the
quality filter on restored segments (docs/quality.md). Same ``ONSEI_*`` names and YAML keys as
README.md's table."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from common.settings import Settings, one_of

TOKENIZERS: tuple[str, ...] = ("neucodec", "distill-neucodec")
# how segments are batched into model calls (services/tokenize/encode.py)
POLICIES: tuple[str, ...] = ("exact", "stitched", "padded", "library")


class TokenizeSettings(Settings):
    prefixes: ClassVar[tuple[str, ...]] = ("tokenize_", "filter_")
    renamed: ClassVar[dict[str, str]] = {"tokenizer": "tokenize_codec",
                                         "neucodec_model": "tokenize_neucodec_model"}

    tokenize_codec: str = Field("neucodec", description="neucodec or distill-neucodec")
    tokenize_neucodec_model: str = Field(
        "neuphonic/neucodec", description="dir, s3 prefix or hub id")
    tokenize_device: str = Field("auto", description="auto, cpu, cuda or cuda:N")
    tokenize_batch_seconds: float = Field(
        240.0, gt=0, le=86400, description="audio seconds per model call")
    tokenize_batching: str = Field(
        "auto", description="auto (stitched on GPU, exact on CPU), exact, stitched: codes as each "
        "segment alone; padded (tails may differ); library (one by one)"
    )
    tokenize_max_batch: int = Field(
        64, ge=1, le=4096, description="segments per model call at most")
    tokenize_max_padding: float = Field(
        0.03, ge=0, le=1, description="padding waste allowed per batch")
    tokenize_window_seconds: float = Field(
        1800.0, gt=0, le=86400, description="audio seconds read ahead and length-bucketed together"
    )

    # --- what the quality filter skips (docs/quality.md) ---------------------------------------
    filter_multi_speaker: bool = Field(
        False, description="segments flagged multi_speaker get no tokens (off: it flagged "
        "6.5 % of clean one-voice segments, docs/quality.md)")
    filter_min_ovrl: float = Field(
        2.0, ge=0, le=5,
        description="segments whose DNSMOS OVRL after restoration is below get no tokens "
        "(0: off)")
    filter_min_ovrl_delta: float | None = Field(
        None, ge=-5, le=5,
        description="segments whose OVRL after - before is below get no tokens (unset: off)")
    filter_restoration_changed_text: bool = Field(
        False, description="segments flagged restoration_changed_text get no tokens")
    filter_duplicates: bool = Field(
        True, description="segments `onsei dedup` lists as copies get no tokens (only in shards "
        "its result covers)")

    filter_min_speech_fraction: float = Field(
        0.1, ge=0.0, le=1.0, description="segments whose restored audio is less speech than "
        "this (Silero VAD share) get no tokens: silence, tones (0: off)")
    filter_max_music: float = Field(
        0.5, ge=0.0, le=1.0, description="segments whose input has more music than this "
        "(quality.music: share of its pauses under a held tone) get no tokens (1: off)")
    filter_max_overlap: float = Field(
        1.0, ge=0.0, le=1.0, description="segments with more of their voiced time under two "
        "talkers at once than this (quality.overlap) get no tokens (1: off)")

    @field_validator("tokenize_codec")
    @classmethod
    def _known_tokenizer(cls, v: str) -> str:
        return one_of(v, TOKENIZERS, "tokenizer")

    @field_validator("tokenize_batching")
    @classmethod
    def _known_batching(cls, v: str) -> str:
        return one_of(v, ("auto", *POLICIES), "batching")
