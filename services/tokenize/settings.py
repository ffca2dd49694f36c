"""The tokenize stage's settings section (its spec names it): the codec, batching, and the
quality filter on restored segments (docs/quality.md; its fields: services/rules/settings.py).
Same ``ONSEI_*`` names and YAML keys as README.md's table."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from common.settings import one_of
from services.rules.settings import FilterSettings

TOKENIZERS: tuple[str, ...] = ("neucodec", "distill-neucodec")
# how segments are batched into model calls (services/tokenize/encode.py)
POLICIES: tuple[str, ...] = ("exact", "stitched", "padded", "library")


class TokenizeSettings(FilterSettings):  # the filter_* fields: services/rules/settings.py
    prefixes: ClassVar[tuple[str, ...]] = ("tokenize_",)
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
    tokenize_window_seconds: float = Field(
        1800.0, gt=0, le=86400, description="audio seconds read ahead and length-bucketed together"
    )

    @field_validator("tokenize_codec")
    @classmethod
    def _known_tokenizer(cls, v: str) -> str:
        return one_of(v, TOKENIZERS, "tokenizer")

    @field_validator("tokenize_batching")
    @classmethod
    def _known_batching(cls, v: str) -> str:
        return one_of(v, ("auto", *POLICIES), "batching")
