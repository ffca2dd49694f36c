"""One typed settings object, from ``ONSEI_*`` environment variables and an optional YAML file.

Precedence (highest first): explicit keyword arguments, environment, the YAML file named by
``ONSEI_CONFIG``, the defaults below. The names are the contract of README.md's table.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

ENHANCERS: tuple[str, ...] = ("sidon", "rnnoise", "none")
TOKENIZERS: tuple[str, ...] = ("neucodec", "distill-neucodec")
BROKER_SCHEMES: tuple[str, ...] = ("redis", "rediss", "sentinel", "amqp", "amqps", "pyamqp")


class ConfigError(ValueError):
    """The configuration cannot be read (e.g. ``ONSEI_CONFIG`` names no file)."""


def one_of(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}: choose one of {', '.join(allowed)}")
    return value


class Settings(BaseSettings):
    # hide_input_in_errors: a rejected value may be a URL with a password in it
    model_config = SettingsConfigDict(env_prefix="ONSEI_", extra="ignore", validate_default=True,
                                      hide_input_in_errors=True)

    # --- locations -------------------------------------------------------------------------
    input_url: str = Field("./data/raw", description="where the raw shards are")
    output_url: str = Field("./data/out", description="output root (stage outputs + _ledger/)")
    shard_pattern: str = Field("shard-{id:06d}.tar", description="shard id -> shard name")
    max_range: int = Field(1_000_000, ge=1, description="most shard ids one --range may name")
    scratch_dir: str = Field(tempfile.gettempdir(), description="local scratch for downloads")
    s3_endpoint_url: str | None = Field(
        None, description="S3-compatible endpoint; falls back to AWS_ENDPOINT_URL"
    )
    s3_max_attempts: int = Field(8, description="attempts per S3 call on transient errors")
    s3_part_size_mb: int = Field(64, description="multipart / ranged-download part size")
    s3_concurrency: int = Field(8, description="parallel parts per transfer")
    s3_connect_timeout: float = Field(10.0, description="seconds to open an S3 connection")
    s3_read_timeout: float = Field(60.0, description="seconds without a byte before retrying")

    # --- queue ---------------------------------------------------------------------------------
    broker_url: SecretStr = Field(
        SecretStr("redis://127.0.0.1:6379/0"), description="Celery broker (Redis or RabbitMQ)"
    )
    visibility_timeout: int = Field(6 * 3600, description="seconds before an unacked task returns")
    max_task_failures: int = Field(3, description="tries before a shard is dead-lettered")
    task_time_limit: int = Field(4 * 3600, description="hard per-shard limit, seconds")
    shutdown_timeout: int = Field(90, description="SIGTERM: seconds to finish the shard in hand")
    until: str = Field("", description="last stage of the chain (empty: the last stage)")
    metrics_port: int = Field(0, description="Prometheus port of a worker (0: off)")
    metrics_host: str = Field("127.0.0.1", description="bind address of the metrics endpoint")
    flower_host: str = Field("127.0.0.1", description="bind address of Flower")
    flower_port: int = Field(5555, description="Flower port")
    flower_basic_auth: SecretStr = Field(
        SecretStr(""), description="user:password for Flower; `onsei flower` requires one"
    )
    cuda_mps: bool = Field(False, description="worker image entrypoint starts the CUDA MPS "
                           "daemon so a worker's processes share the GPU's SMs")
    worker_concurrency: int = Field(1, description="processes per worker; each loads its model")
    prefetch_shards: int = Field(
        1, description="shards reserved and downloaded ahead while one is computed (0: off)"
    )
    retry_backoff_seconds: float = Field(2.0, description="first retry delay; doubles, jittered")
    retry_backoff_max_seconds: float = Field(600.0, description="longest retry delay")

    @field_validator("broker_url")
    @classmethod
    def _broker_scheme(cls, v: SecretStr) -> SecretStr:
        url = v.get_secret_value()
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if scheme not in BROKER_SCHEMES:
            # the URL itself may hold a password: only its scheme is repeated
            raise ValueError(f"the broker URL must start with one of "
                             f"{', '.join(s + '://' for s in BROKER_SCHEMES)} (got "
                             f"{scheme + '://' if scheme else 'no scheme'})")
        return v

    # --- cost (common/cost.py; docs/operations.md "Cost") --------------------------------------
    node_type: str = Field("", description="accelerator of this node as priced: H100, L4, A10G, "
                           "cpu, ... (common/cost.py); written into every done record")
    node_pricing: Literal["spot", "on-demand"] = Field("spot", description="spot or on-demand")
    node_price_per_hour: float | None = Field(
        None, ge=0, description="USD per node-hour; unset: the table's per-GPU price x node_gpus")
    node_gpus: int = Field(1, ge=1, description="GPUs per node")
    node_parallel_shards: int = Field(
        0, ge=0, description="shards the node works on at once (0: worker_concurrency x node_gpus)")

    # --- shard limits ------------------------------------------------------------------------
    max_member_bytes: int = Field(2 * 1024**3, description="larger members are error records")
    max_member_seconds: float = Field(4 * 3600.0, description="longer audio is an error record")
    min_member_seconds: float = Field(0.3, description="shorter audio is an error record")
    max_sidecar_bytes: int = Field(1024 * 1024, description="largest .json sidecar read")

    # --- asr ------------------------------------------------------------------------------------
    languages: Annotated[list[str], NoDecode] = Field(["ja", "en"], description="languages kept after language ID")
    language_threshold: float = Field(0.5, description="min language probability to keep")
    lid_windows: int = Field(3, description="clips spread over a file's head for language ID")
    lid_head_seconds: float = Field(
        90.0, description="language ID looks at this head; the rest is VAD-ed only if kept")
    asr_model: str = Field("large-v3-turbo", description="size name, dir, hub id, bundled:NAME")
    asr_device: str = Field("auto", description="auto, cuda, cpu")
    asr_compute_type: str = Field("auto", description="auto: float16 on GPU, int8 on CPU")
    asr_batch_size: int = Field(16, description="batched inference")
    asr_chunk_seconds: float = Field(1800.0, description="long audio is transcribed in windows")
    asr_beam_size: int = Field(1, description="beam size (1 = greedy, fastest)")
    segment_min_seconds: float = Field(1.0, description="shortest kept segment")
    segment_max_seconds: float = Field(30.0, description="longest kept segment")
    max_compression_ratio: float = Field(2.4, description="above: repetition loop")
    min_avg_logprob: float = Field(-1.0, description="below: low confidence")
    max_no_speech_prob: float = Field(0.6, description="above (with low logprob): non-speech")
    asr_cpu_threads: int = Field(0, description="CTranslate2 CPU threads (0: its default)")
    asr_vad_threshold: float = Field(0.5, description="Silero VAD speech probability threshold")
    asr_vad_min_silence_ms: int = Field(
        500, description="a pause at least this long may end a segment")
    asr_merge_gap_seconds: float = Field(
        3.0, description="pauses up to this stay inside one transcription clip")

    @field_validator("languages", mode="before")
    @classmethod
    def _split_languages(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        return v

    @field_validator("languages")
    @classmethod
    def _whisper_codes(cls, v: list[str]) -> list[str]:
        from common.languages import COMMON_NAMES, WHISPER_LANGUAGES

        if not v:
            raise ValueError("no language to keep: give Whisper codes such as ja,en")
        for code in v:
            if code not in WHISPER_LANGUAGES:
                hint = f" (did you mean {COMMON_NAMES[code.lower()]}?)" \
                    if code.lower() in COMMON_NAMES else ""
                raise ValueError(f"{code!r} is not a Whisper language code{hint}; valid codes: "
                                 f"{', '.join(WHISPER_LANGUAGES)}")
        return v

    # --- enhance -------------------------------------------------------------------------------
    enhancer: str = Field("sidon", description="sidon, rnnoise or none")
    sidon_model: str = Field("sarulab-speech/sidon-v0.1", description="dir, s3 prefix or hub id")
    enhance_device: str = Field("auto", description="auto, cuda, cpu")
    enhance_chunk_seconds: float = Field(10.0, description="fixed chunk length for restoration")
    enhance_context_seconds: float = Field(0.5, description="context each side of a chunk")
    enhance_batch_size: int = Field(16, description="chunks per model call")
    enhance_crossfade_seconds: float = Field(
        0.04, description="raised-cosine crossfade across chunk seams (<= 2 x context)")
    enhance_frontend: str = Field(
        "torch", description="Sidon filterbank: torch (batched, on the device) or transformers")
    enhance_pack_rounds: int = Field(
        4, description="batches' worth of chunks pooled before packing (more: less padding)")

    @field_validator("enhancer")
    @classmethod
    def _known_enhancer(cls, v: str) -> str:
        return one_of(v, ENHANCERS, "enhancer")

    # --- quality annotations of restored segments and the filter on them (docs/quality.md) ----
    quality_annotations: bool = Field(
        True, description="annotate kept segments: DNSMOS before/after, speaker, fidelity sample")
    quality_dnsmos_hop_seconds: float = Field(
        0.0, ge=0.0, description="DNSMOS window hop (0: the fewest equal pieces <= 9.01 s, each "
        "scored once at its own length; 1.0: the reference's sliding 9.01 s windows)")
    quality_speaker_threshold: float = Field(
        0.84, ge=-1.0, le=1.0, description="speaker consistency below this flags multi_speaker")
    quality_fidelity_fraction: float = Field(
        0.05, ge=0.0, le=1.0, description="share of segments re-transcribed after restoration (0-1)")
    quality_fidelity_cer: float = Field(
        0.3, description="re-transcription CER above this flags restoration_changed_text")
    quality_fidelity_model: str = Field(
        "", description="Whisper model for the re-transcription (empty: ONSEI_ASR_MODEL)")
    quality_batch_segments: int = Field(16, ge=1, description="segments annotated together")
    filter_multi_speaker: bool = Field(True, description="segments flagged multi_speaker get no tokens")
    filter_min_ovrl: float = Field(
        2.0, description="segments whose DNSMOS OVRL after restoration is below get no tokens "
        "(0: off)")
    filter_min_ovrl_delta: float | None = Field(
        None, description="segments whose OVRL after - before is below get no tokens (unset: off)")
    filter_restoration_changed_text: bool = Field(
        False, description="segments flagged restoration_changed_text get no tokens")

    # --- tokenize ------------------------------------------------------------------------------
    tokenizer: str = Field("neucodec", description="neucodec or distill-neucodec")
    neucodec_model: str = Field("neuphonic/neucodec", description="dir, s3 prefix or hub id")
    tokenize_device: str = Field("auto", description="auto, cuda, cpu")
    tokenize_batch_seconds: float = Field(240.0, description="audio seconds per model call")
    tokenize_batching: str = Field(
        "auto", description="auto (stitched on GPU, exact on CPU), exact, stitched: codes as each "
        "segment alone; padded (tails may differ); library (one by one)"
    )
    tokenize_max_batch: int = Field(64, description="segments per model call at most")
    tokenize_max_padding: float = Field(0.03, description="padding waste allowed per batch")
    tokenize_window_seconds: float = Field(
        1800.0, description="audio seconds read ahead and length-bucketed together"
    )

    @field_validator("tokenizer")
    @classmethod
    def _known_tokenizer(cls, v: str) -> str:
        return one_of(v, TOKENIZERS, "tokenizer")

    # --- models ---------------------------------------------------------------------------------
    model_cache: str = Field(
        str(Path("~/.cache/onsei/models").expanduser()), description="weights looked up first"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        cfg = os.environ.get("ONSEI_CONFIG")
        if cfg:
            if not Path(cfg).is_file():
                raise ConfigError(f"ONSEI_CONFIG={cfg}: no such file")
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=cfg))
        return tuple(sources)

    # --- helpers ----------------------------------------------------------------------------------
    def shard_name(self, shard_id: int) -> str:
        return self.shard_pattern.format(id=shard_id)

    def shard_stem(self, shard_id: int) -> str:
        """``shard-000123``: the name without its ``.tar``; outputs are named after it."""
        name = self.shard_name(shard_id)
        return name.removesuffix(".tar")

    def redacted(self) -> dict[str, Any]:
        """Effective settings with secrets (URL passwords, keys) hidden: safe to print or log."""
        from common.redact import redact_value

        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = redact_value(value.get_secret_value(), secret=True)
            else:
                value = redact_value(value)
            out[f"ONSEI_{name.upper()}"] = value
        return out


def describe_errors(e: ValidationError) -> str:
    """One line per invalid setting, named as the user sets it: ``ONSEI_LANGUAGES: ...``."""
    lines = []
    for err in e.errors():
        name = "ONSEI_" + str(err["loc"][0]).upper() if err.get("loc") else "settings"
        lines.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once). Tests build ``Settings(...)`` directly."""
    return Settings()
