"""The generic settings, from ``ONSEI_*`` environment variables and an optional YAML file.

Precedence (highest first): explicit keyword arguments, environment, the YAML file named by
``ONSEI_CONFIG``, the defaults below. The names are the contract of README.md's table.

This class holds what every process needs (locations, queue, storage, metrics, cost, model
cache). A stage's own settings are a subclass in ``services/<stage>/settings.py`` named by its
spec; the pipeline's settings class joins them all (docs/architecture.md, "Settings"), so one
YAML file and one set of ``ONSEI_*`` names configure everything. Unknown keyword arguments are
an error (a misspelt or misplaced setting never passes silently); a YAML key is read by the
classes that declare it.

Only an entry point (a CLI command, a worker's app module, ``onsei run``) builds settings, which
reads the environment; library code is handed them. Every value is checked here, bounds
included (no NaN or infinity anywhere), so a value that would break a run later stops the
process before it starts.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, cast

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from common.errors import ConfigError
from common.renamed import FormerEnvNames, FormerNames, renames_of

BROKER_SCHEMES: tuple[str, ...] = ("redis", "rediss", "sentinel", "amqp", "amqps", "pyamqp")


def one_of(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}: choose one of {', '.join(allowed)}")
    return value


def ordered(low: float, high: float, low_name: str, high_name: str) -> None:
    """Two settings that bound a range: the low one must stay below the high one."""
    if low >= high:
        raise ValueError(f"ONSEI_{low_name.upper()} ({low:g}) must be below "
                         f"ONSEI_{high_name.upper()} ({high:g})")


class Settings(BaseSettings):
    # hide_input_in_errors: a rejected value may be a URL with a password in it;
    # allow_inf_nan: NaN fails every comparison (a filter at NaN is off); 1e999 reads as infinity
    model_config = SettingsConfigDict(env_prefix="ONSEI_", extra="forbid", validate_default=True,
                                      hide_input_in_errors=True, allow_inf_nan=False)
    # a stage's section names each of its own fields with one of these (the generic class,
    # declaring none, is exempt); ``renamed`` maps former names to current ones
    # (common/renamed.py reads them, warning)
    prefixes: ClassVar[tuple[str, ...]] = ()
    renamed: ClassVar[dict[str, str]] = {}

    profile: str = Field(
        "auto", description="a named set of models and filters (common/profiles.py): offline, "
        "standard, gpu; auto: gpu on a node with a GPU, else standard; single settings override "
        "it")

    # --- locations -------------------------------------------------------------------------
    input_url: str = Field("./data/raw", description="where the raw shards are")
    output_url: str = Field("./data/out", description="output root (stage outputs + _ledger/)")
    shard_pattern: str = Field("shard-{id:06d}.tar", description="shard id -> shard name")
    max_range: int = Field(
        1_000_000, ge=1, le=10**12, description="most shard ids one --range may name")
    scratch_dir: str = Field(tempfile.gettempdir(), description="local scratch for downloads")
    s3_endpoint_url: str | None = Field(
        None, description="S3-compatible endpoint; falls back to AWS_ENDPOINT_URL"
    )
    s3_max_attempts: int = Field(
        8, ge=1, le=100, description="attempts per S3 call on transient errors")
    s3_part_size_mb: int = Field(
        64, ge=1, le=5120, description="multipart / ranged-download part size")
    s3_concurrency: int = Field(8, ge=1, le=256, description="parallel parts per transfer")
    s3_connect_timeout: float = Field(
        10.0, gt=0, le=3600, description="seconds to open an S3 connection")
    s3_read_timeout: float = Field(
        60.0, gt=0, le=3600, description="seconds without a byte before retrying")

    # --- queue ---------------------------------------------------------------------------------
    broker_url: SecretStr = Field(
        SecretStr("redis://127.0.0.1:6379/0"), description="Celery broker (Redis or RabbitMQ)"
    )
    visibility_timeout: int = Field(
        6 * 3600, ge=1, le=30 * 86400, description="seconds before an unacked task returns")
    max_task_failures: int = Field(
        3, ge=1, le=1000, description="tries before a shard is dead-lettered")
    task_time_limit: int = Field(
        4 * 3600, ge=1, le=30 * 86400, description="hard per-shard limit, seconds")
    shutdown_timeout: int = Field(
        90, ge=0, le=86400, description="SIGTERM: seconds to finish the shard in hand")
    until: str = Field("", description="last stage of the chain (empty: the last stage)")
    metrics_port: int = Field(0, ge=0, le=65535, description="Prometheus port of a worker (0: off)")
    metrics_host: str = Field("127.0.0.1", description="bind address of the metrics endpoint")
    flower_host: str = Field("127.0.0.1", description="bind address of Flower")
    flower_port: int = Field(5555, ge=1, le=65535, description="Flower port")
    flower_basic_auth: SecretStr = Field(
        SecretStr(""), description="user:password for Flower; `onsei flower` requires one"
    )
    cuda_mps: bool = Field(False, description="worker image entrypoint starts the CUDA MPS "
                           "daemon so a worker's processes share the GPU's SMs")
    worker_concurrency: int = Field(
        1, ge=1, le=1024, description="processes per worker; each loads its model")
    worker_native_threads: int = Field(
        0, ge=0, le=1024,
        description="BLAS/OpenMP threads per worker process (0: the node's cores shared among "
                    "worker_concurrency)")
    worker_mmap_threshold_kb: int = Field(
        -1, ge=-2, le=32768,
        description="allocations of this many KiB and more get their own mapping, handed back "
                    "when freed, so a long member does not fragment the threads' heaps, at a "
                    "page fault per 4 KiB each time one comes again (glibc; 0: the allocator's "
                    "default; -2: nothing mapped, every thread on one heap that keeps 128 MB "
                    "free for the next window; -1: each stage's own, as its spec declares: "
                    "1024 where memory must stay flat on long members, -2 where a model asks "
                    "for the same large buffers window after window)")
    prefetch_shards: int = Field(
        1, ge=0, le=64,
        description="shards reserved and downloaded ahead while one is computed (0: off)")
    retry_backoff_seconds: float = Field(
        2.0, ge=0, le=86400, description="first retry delay; doubles, jittered")
    retry_backoff_max_seconds: float = Field(
        600.0, ge=0, le=7 * 86400, description="longest retry delay")

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
        from common.redact import broker_url_problem

        problem = broker_url_problem(url)
        if problem:
            raise ValueError(f"the broker URL cannot be parsed: {problem}")
        return v

    # --- cost (common/node/price.py; docs/operations.md "Cost") -----------------------------------
    node_type: str = Field("", description="accelerator of this node as priced: H100, L4, A10G, "
                           "cpu, ... (common/node/price.py); written into every done record; "
                           "unset: nvidia-smi's GPU (common/node/accelerator.py), else unknown")
    node_pricing: Literal["spot", "on-demand"] = Field("spot", description="spot or on-demand")
    node_price_per_hour: float | None = Field(
        None, ge=0, le=100_000,
        description="USD per node-hour; unset: the table's per-GPU price x node_gpus")
    node_gpus: int = Field(1, ge=1, le=1024, description="GPUs per node (unset: detected, "
                           "common/node/price.py)")
    node_parallel_shards: int = Field(
        0, ge=0, le=100_000,
        description="shards the node works on at once (0: worker_concurrency x node_gpus)")

    # --- shard limits ------------------------------------------------------------------------
    max_member_bytes: int = Field(
        2 * 1024**3, ge=1, le=1024**4, description="larger members are error records")
    max_member_seconds: float = Field(
        4 * 3600.0, gt=0, le=7 * 86400, description="longer audio is an error record")
    min_member_seconds: float = Field(
        0.3, ge=0, le=86400, description="shorter audio is an error record")
    max_sidecar_bytes: int = Field(
        1024 * 1024, ge=1, le=1024**3, description="largest .json sidecar read")

    # --- export ---------------------------------------------------------------------------------
    export_licences: str = Field(
        "", description="licences `onsei export` keeps, comma-separated SPDX ids (`unknown`: "
                        "files without metadata); empty: every licence")

    # --- models ---------------------------------------------------------------------------------
    model_cache: str = Field(
        str(Path("~/.cache/onsei/models").expanduser()), description="weights looked up first"
    )
    model_trusted_sha256: str = Field(
        "", description="comma-separated sha256 of model files that may be unpickled in full "
        "(which can run code; common/models/safe_load.py): only files you made or trust")

    @field_validator("model_trusted_sha256")
    @classmethod
    def _sha256s(cls, v: str) -> str:
        from common.models.safe_load import trusted_hashes

        trusted_hashes(v)  # raises on anything that is not a list of sha256
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [
            FormerNames(settings_cls, init_settings, "keyword"), env_settings,
            FormerEnvNames(settings_cls)]
        cfg = os.environ.get("ONSEI_CONFIG")
        yaml_values: dict[str, Any] = {}
        if cfg:
            if not Path(cfg).is_file():
                raise ConfigError(f"ONSEI_CONFIG={cfg}: no such file")
            yaml_source = _OwnKeys(settings_cls, yaml_file=cfg)
            yaml_values = yaml_source()
            sources.append(FormerNames(settings_cls, yaml_source, f"{cfg}: YAML key"))
        from common.profiles import ProfileSource, requested, resolve

        try:
            profile = resolve(requested(init_settings(), yaml_values))
        except ValueError as e:
            raise ConfigError(f"ONSEI_PROFILE: {e}") from None
        sources.append(ProfileSource(settings_cls, profile))
        return tuple(sources)

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, v: str) -> str:
        from common.profiles import NAMES

        return one_of(v.strip().lower(), NAMES, "profile")

    @field_validator("shard_pattern")
    @classmethod
    def _one_name_per_id(cls, v: str) -> str:
        # a pattern without {id} names one file for every id: a range would process it again
        # and again; a bad format spec would fail at the first shard instead of here
        try:
            names = {v.format(id=i) for i in (0, 1, 10**6)}
        except (KeyError, IndexError, ValueError, AttributeError) as e:
            raise ValueError(f"{v!r} is not a format with {{id}} (e.g. shard-{{id:06d}}.tar): "
                             f"{e.__class__.__name__}: {e}") from None
        if len(names) < 3:
            raise ValueError(f"{v!r} gives every shard id the same name: it needs {{id}} "
                             f"(e.g. shard-{{id:06d}}.tar)")
        from common.shards.pattern import climbs

        why = climbs(v)
        if why:
            raise ValueError(f"{v!r} could name a shard outside its root: {why}")
        return v

    @model_validator(mode="after")
    def _ranges(self) -> Settings:
        ordered(self.min_member_seconds, self.max_member_seconds, "min_member_seconds",
                "max_member_seconds")
        return self

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


class _OwnKeys(YamlConfigSettingsSource):
    """The YAML file holds every section's keys: each settings class reads those it declares
    (and their former names, renamed by the caller). The file is read by
    common/setting_names.py: anything but a mapping of names is one sentence."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        from common.setting_names import read_config

        return read_config(file_path)

    def __call__(self) -> dict[str, Any]:
        known = self.settings_cls.model_fields.keys() | renames_of(self.settings_cls).keys()
        return {k: v for k, v in super().__call__().items() if k in known}


def describe_errors(e: ValidationError) -> str:
    """One line per invalid setting, named as the user sets it: ``ONSEI_ASR_LANGUAGES: ...``."""
    lines = []
    for err in e.errors():
        msg = err["msg"].removeprefix("Value error, ")
        # a check across settings (no loc) names them in its message
        lines.append(f"ONSEI_{str(err['loc'][0]).upper()}: {msg}" if err.get("loc") else msg)
    return "\n".join(lines)


S = TypeVar("S", bound=Settings)


def section(settings: Settings, cls: type[S]) -> S:
    """``settings`` as the section ``cls`` (a stage's) and nothing more: a view holding only the
    fields ``cls`` declares (its own and the generic ones), so a stage's code cannot read another
    stage's settings by accident. The entry point built and checked the pipeline's settings,
    which hold every section; the view copies its values without reading the environment
    again (that would bypass what the entry point was given and checked)."""
    if not isinstance(settings, cls):
        raise TypeError(f"{cls.__name__} needed, got {type(settings).__name__}: build the "
                        f"pipeline's settings (services.stages.PipelineSettings) at the entry "
                        f"point")
    if type(settings) is cls:
        return settings
    values = {k: getattr(settings, k) for k in cls.model_fields}
    view = cls.model_construct(_fields_set=settings.model_fields_set & values.keys(), **values)
    return cast(S, view)
