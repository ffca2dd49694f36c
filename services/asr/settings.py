"""The ASR stage's settings section (its spec names it): language ID, model, batching, VAD,
segment limits and quality flags. Same ``ONSEI_*`` names and YAML keys as README.md's table."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from common.settings import ordered
from services.whisper.settings import WhisperSettings


class AsrSettings(WhisperSettings):
    prefixes: ClassVar[tuple[str, ...]] = ("asr_",)
    renamed: ClassVar[dict[str, str]] = {old: f"asr_{old}" for old in (
        "languages", "language_threshold", "lid_windows", "lid_first_look_probability",
        "lid_head_seconds", "segment_min_seconds", "segment_max_seconds",
        "segment_target_seconds", "max_compression_ratio", "min_avg_logprob",
        "max_no_speech_prob")}

    asr_languages: Annotated[list[str], NoDecode] = Field(
        ["ja", "en"], description="languages kept after language ID")
    asr_language_threshold: float = Field(
        0.5, ge=0, le=1, description="min language probability to keep")
    asr_lid_windows: int = Field(
        3, ge=1, le=100, description="clips spread over a file's head for language ID")
    asr_lid_first_look_probability: float = Field(
        1.01, ge=0, le=2, description="one window this sure to be in no kept language (the "
        "languages not kept, summed) drops the file after one encoder pass; closer calls look "
        "at all the windows (above 1, the default: always all, so a file is dropped only when "
        "none of the windows looked at is in a kept language)")
    asr_lid_head_seconds: float = Field(
        90.0, gt=0, le=86400,
        description="language ID looks at this head; the rest is VAD-ed only if kept")
    asr_device: str = Field("auto", description="auto, cpu, cuda or cuda:N")
    asr_batch_size: int = Field(16, ge=1, le=1024, description="batched inference")
    asr_chunk_seconds: float = Field(
        120.0, ge=30, le=86400,
        description="VAD runs in windows of this length (its memory is bounded by it)")
    asr_beam_size: int = Field(
        5, ge=1, le=64, description="beam size (5, as faster-whisper's own default: chosen on "
        "WER first, docs/asr.md; 1 = greedy, fastest)")
    asr_files_in_flight: int = Field(
        0, ge=0, le=16, description="files of a shard transcribed at once (0: two on a CPU, "
        "where the next file's encoder runs beside this one's beam search, each file's beam search "
        "on a decoder replica of its own; one on a GPU)")
    asr_patience: float = Field(
        1.0, ge=0.5, le=10, description="beam search patience (CTranslate2: a beam ends when "
        "beam_size x patience hypotheses have ended)")
    asr_punctuation_prompt: bool = Field(
        True, description="each window decoded after a short punctuated text in its language "
        "(services/asr/punctuation.py), so Whisper keeps full stops and capitals")
    asr_punctuation_prompt_skip: Annotated[list[str], NoDecode] = Field(
        [], description="languages decoded without that prompt even when it is on (comma-"
        "separated Whisper codes; docs/asr.md measures what it costs and buys per language)")
    asr_segment_min_seconds: float = Field(
        0.5, ge=0, le=3600, description="shortest kept segment (flagged too_short below); "
        "pieces cut at sentence ends are never under 1 s, whatever this is")
    asr_segment_max_seconds: float = Field(30.0, gt=0, le=3600, description="longest kept segment")
    asr_segment_target_seconds: float = Field(
        15.0, ge=0, le=3600, description="a segment longer than this is cut at sentence ends "
        "(punctuation and a pause) into pieces up to this long; a longer sentence stays whole; "
        "0: not cut")
    asr_max_compression_ratio: float = Field(
        2.4, gt=0, le=100, description="above: repetition loop")
    asr_min_avg_logprob: float = Field(-1.0, ge=-100, le=0, description="below: low confidence")
    asr_max_no_speech_prob: float = Field(
        0.6, ge=0, le=1, description="above (with low logprob): non-speech")
    asr_vad_threshold: float = Field(
        0.5, ge=0, le=1, description="Silero VAD speech probability threshold")
    asr_vad_min_silence_ms: int = Field(
        500, ge=0, le=60_000, description="a pause at least this long may end a segment")
    asr_vad_speech_pad_ms: int = Field(
        200, ge=0, le=2000, description="air kept each side of a speech span (Silero never lets "
        "two pads overlap); the first span of an encoder window starts this far before its "
        "speech")
    asr_quiet_peak_dbfs: float = Field(
        -20.0, ge=-120.0, le=0.0,
        description="a file whose peak is under this level is heard raised to a -6 dBFS peak "
                    "by the VAD and Whisper (services/asr/level.py; -120: never)")
    asr_word_timestamps: bool = Field(
        True, description="word times and probabilities per segment; segments trimmed to them")
    asr_word_margin_seconds: float = Field(
        0.2, ge=0.0, le=10.0,
        description="kept before the first word and after the last when trimming")
    asr_phonemes: bool = Field(
        False, description="English segments also get IPA phonemes (espeak-ng)")
    asr_music_suppression: bool = Field(
        False, description="take a music bed's held notes out of the audio Whisper decodes "
        "(services/asr/music.py), in the 30 s blocks where music is found; off by default: it "
        "helped under one bed and hurt under another (docs/asr.md)")
    asr_music_gate: float = Field(
        0.75, ge=0, le=1, description="a block is treated (suppressed or separated) when a held "
        "tone sounds in at least this share of its frames (clean speech 0.3-0.5, under a bed "
        "0.9-1); 0: every block")
    asr_separation_model: str = Field(
        "", description="a Demucs model file (demucs's .th or .safetensors) or a folder, s3:// "
        "prefix or hub repo (adefossez/HTDemucs) holding a bag; Whisper decodes its vocals in "
        "the 30 s blocks the music gate calls music (services/asr/separation.py); empty: off")
    asr_separation_min_removed: float = Field(
        0.01, ge=0, le=1, description="a separated block is decoded from its vocals only when "
        "the separator took out at least this share of its energy (clean speech: 0.0002-0.003 "
        "with htdemucs; speech under a bed 10 dB down: about 0.1), else from the source as it "
        "is; 0: every separated block")
    asr_separation_name: str = Field(
        "htdemucs", min_length=1, description="the bag's name: its <name>.yaml in that folder")
    asr_separation_backend: Literal["demucs", "spleeter"] = Field(
        "demucs", description="what asr_separation_model holds: a Demucs model or bag, or "
        "Spleeter's TF checkpoint (a folder with model.index and model.data-00000-of-00001, "
        "services/asr/spleeter.py)")
    asr_merge_gap_seconds: float = Field(
        3.0, ge=0, le=3600, description="pauses up to this stay inside one transcription clip")

    @field_validator("asr_languages", "asr_punctuation_prompt_skip", mode="before")
    @classmethod
    def _split_languages(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        return v

    @field_validator("asr_languages")
    @classmethod
    def _whisper_codes(cls, v: list[str]) -> list[str]:
        from services.asr.languages import COMMON_NAMES, WHISPER_LANGUAGES

        if not v:
            raise ValueError("no language to keep: give Whisper codes such as ja,en")
        for code in v:
            if code not in WHISPER_LANGUAGES:
                hint = f" (did you mean {COMMON_NAMES[code.lower()]}?)" \
                    if code.lower() in COMMON_NAMES else ""
                raise ValueError(f"{code!r} is not a Whisper language code{hint}; valid codes: "
                                 f"{', '.join(WHISPER_LANGUAGES)}")
        return v

    @model_validator(mode="after")
    def _segment_range(self) -> AsrSettings:
        ordered(self.asr_segment_min_seconds, self.asr_segment_max_seconds,
                "asr_segment_min_seconds", "asr_segment_max_seconds")
        return self

    @model_validator(mode="after")
    def _one_music_front_end(self) -> AsrSettings:
        if self.asr_separation_model and self.asr_music_suppression:
            raise ValueError("asr_separation_model and asr_music_suppression both treat the "
                             "blocks that hold music: set one of them")
        return self
