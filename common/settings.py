"""The generic settings, from ``ONSEI_*`` environment variables and an optional YAML file.

Precedence (highest first): explicit keyword arguments, environment, the YAML file named by
``ONSEI_CONFIG``, the defaults below. The names are the contract of README.md's table.

This class holds what every process needs (locations, queue, storage, metrics, cost, model
cache). A stage's own settings are a subclass in ``services/<stage>/settings.py`` named by its
spec; the pipeline's settings class joins them all (docs/architecture.md, "Settings"), so one
YAML file and one set of ``ONSEI_*`` names configure everything. Unknown keyword arguments are
an error (a misspelt or misplaced setting never passes silently); a YAML key is read by the
classes that declare it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

BROKER_SCHEMES: tuple[str, ...] = ("redis", "rediss", "sentinel", "amqp", "amqps", "pyamqp")


class ConfigError(ValueError):
    """The configuration cannot be read (e.g. ``ONSEI_CONFIG`` names no file)."""


def one_of(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}: choose one of {', '.join(allowed)}")
    return value


class Settings(BaseSettings):
    # hide_input_in_errors: a rejected value may be a URL with a password in it
    model_config = SettingsConfigDict(env_prefix="ONSEI_", extra="forbid", validate_default=True,
                                      hide_input_in_errors=True)

    # sections made from these settings by :meth:`of`, by class (dropped when a value changes)
    _sections: dict[type, Settings] = PrivateAttr(default_factory=dict)

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
        None, ge=0, description="USD per node-hour; unset: the table's per-GPU price x node_gpus")
    node_gpus: int = Field(1, ge=1, description="GPUs per node")
    node_parallel_shards: int = Field(
        0, ge=0, description="shards the node works on at once (0: worker_concurrency x node_gpus)")

    # --- shard limits ------------------------------------------------------------------------
    max_member_bytes: int = Field(2 * 1024**3, description="larger members are error records")
    max_member_seconds: float = Field(4 * 3600.0, description="longer audio is an error record")
    min_member_seconds: float = Field(0.3, description="shorter audio is an error record")
    max_sidecar_bytes: int = Field(1024 * 1024, description="largest .json sidecar read")

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
            sources.append(_OwnKeys(settings_cls, yaml_file=cfg))
        return tuple(sources)

    @classmethod
    def of(cls, settings: Settings) -> Self:
        """``settings`` as this class: the same value for every field both have; this class's
        other fields (a stage's section) from the environment and the YAML file as they are at
        the first call (made once per ``settings`` object: a spec asks per shard). Returns
        ``settings`` itself when it already is one (the pipeline's settings are)."""
        if isinstance(settings, cls):
            return settings
        made = settings._sections.get(cls)
        if made is None:
            mine = cls.model_fields
            made = settings._sections[cls] = cls(
                **{k: getattr(settings, k) for k in type(settings).model_fields if k in mine})
        return made  # type: ignore[return-value]  # made by cls above, typed as its base

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in type(self).model_fields:
            self._sections.clear()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        copied._sections = {}  # made from the old values
        return copied

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
    """The YAML file holds every section's keys: each settings class reads those it declares."""

    def __call__(self) -> dict[str, Any]:
        fields = self.settings_cls.model_fields
        return {k: v for k, v in super().__call__().items() if k in fields}


def describe_errors(e: ValidationError) -> str:
    """One line per invalid setting, named as the user sets it: ``ONSEI_LANGUAGES: ...``."""
    lines = []
    for err in e.errors():
        name = "ONSEI_" + str(err["loc"][0]).upper() if err.get("loc") else "settings"
        lines.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide generic settings (read once); services/stages.py has the pipeline's,
    with every stage's section. Tests build ``Settings(...)`` directly."""
    return Settings()
