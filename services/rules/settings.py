"""The filter's settings: a shared base of the sections that apply the rules (enhance before
restoration, tokenize after it), so both read one ``ONSEI_FILTER_*`` value
(common/stages/spec.py ``collisions``). Same names and YAML keys as README.md's table."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from common.settings import Settings


class FilterSettings(Settings):
    prefixes: ClassVar[tuple[str, ...]] = ("filter_",)

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
        "(quality.music: share of its pauses under a held tone) are dropped before restoration "
        "and get no tokens (1: off)")
    filter_max_overlap: float = Field(
        1.0, ge=0.0, le=1.0, description="segments with more of their voiced time under two "
        "talkers at once than this (quality.overlap) get no tokens (1: off)")
