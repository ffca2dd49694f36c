"""The fleet file (deploy/fleet.yaml): global knobs and one entry per target."""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, model_validator

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,40}$")


class BacklogPolicy(BaseModel):
    """Follow a queue: count = clamp(ceil(backlog / shards_per_worker), min, max)."""

    queue: str = Field(description="Celery queue whose backlog drives the count (e.g. asr)")
    shards_per_worker: int = Field(20, ge=1, description="backlog one worker should own")
    min: int = Field(0, ge=0, description="floor while there is a backlog")
    max: int = Field(50, ge=0, description="ceiling")
    scale_to_zero: bool = Field(True, description="no backlog (queued + in flight): no workers")

    def desired(self, backlog: int) -> int:
        if backlog <= 0 and self.scale_to_zero:
            return 0
        want = math.ceil(max(0, backlog) / self.shards_per_worker)
        return max(self.min, min(self.max, want))


class Target(BaseModel):
    type: str | None = Field(None, description="accelerator for `sky jobs launch --gpus` "
                                               "(e.g. L4:1); none: the template's own")
    count: int = Field(0, ge=0, description="fixed number of jobs (ignored with backlog)")
    template: str = Field(description="SkyPilot task YAML")
    providers: list[str] = Field(default_factory=list,
                                 description="clouds to spread over (`--cloud`); empty: the "
                                             "template's any_of decides")
    env: list[str] = Field(default_factory=list,
                           description="env var NAMES passed through (`--env NAME`): values "
                                       "come from the fleet's environment, never the file")
    backlog: BacklogPolicy | None = None


class FleetConfig(BaseModel):
    poll_interval_sec: float = Field(60.0, gt=0)
    max_launch_per_cycle: int = Field(4, ge=0)
    provider_cap: int = Field(50, ge=0, description="active jobs per cloud (spot preemption "
                                                    "rate climbs sharply beyond ~50)")
    provider_caps: dict[str, int] = Field(default_factory=dict, description="per-cloud override")
    scale_down_after_cycles: int = Field(3, ge=1, description="cycles a surplus must persist "
                                                              "before jobs are cancelled")
    broker_url_env: str = Field("ONSEI_BROKER_URL", description="env var with the Redis URL "
                                                                "that backlog targets read")
    targets: dict[str, Target]

    @model_validator(mode="after")
    def _names(self) -> FleetConfig:
        for name in self.targets:
            if not NAME_RE.match(name):
                raise ValueError(f"target name {name!r}: lowercase letters, digits, '-'")
        return self

    def cap(self, provider: str) -> int:
        return self.provider_caps.get(provider.lower(), self.provider_cap)


def load_config(path: str | Path) -> FleetConfig:
    path = Path(path)
    cfg = FleetConfig.model_validate(yaml.safe_load(path.read_text()) or {})
    for t in cfg.targets.values():  # templates are relative to the repo root or the file
        if not Path(t.template).is_file() and (path.parent / t.template).is_file():
            t.template = str(path.parent / t.template)
    return cfg
