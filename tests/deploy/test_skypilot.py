"""SkyPilot task templates and the fleet file: parse, and hold their invariants."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from services.ops.fleet.config import load_config
from services.pipeline import PIPELINE

REPO = Path(__file__).resolve().parents[2]
# every stage with deploy entries (its spec says where its workers run)
STAGES = tuple(s.name for s in PIPELINE.specs if s.deploy)
SECRET_RE = re.compile(r"(redis|amqp)s?://[^\s$]*:[^\s$@]+@|AKIA[0-9A-Z]{12,}|"
                       r"\b[A-Z_]*(PASSWORD|SECRET|TOKEN)[A-Z_]*\s*[:=][ \t]*['\"]?[^\s'\"$#]")


@pytest.mark.parametrize("stage", STAGES)
def test_template(stage: str) -> None:
    path = REPO / "deploy/skypilot" / f"{stage}.yaml"
    text = path.read_text()
    task = yaml.safe_load(text)
    res = task["resources"]
    assert res["use_spot"] is True
    clouds = {r["cloud"] for r in res["any_of"]}
    assert len(clouds) >= 2 and len(res["any_of"]) >= 3
    # credentials: declared null (given with --env at launch), never a value in the file
    assert task["envs"]["ONSEI_BROKER_URL"] is None
    assert not any(k.startswith("AWS_") for k in task["envs"])
    assert not SECRET_RE.search(text), SECRET_RE.search(text)
    # apt retried while the dpkg lock is held, 30 s apart
    setup = task["setup"]
    assert re.search(r"for \w+ in \$\(seq 1 \d+\)", setup) and "sleep 30" in setup
    assert "apt_retry update" in setup and f'".[{stage}]"' in setup
    run = task["run"]
    # the worker runs under the restart loop (a worker that dies comes back)
    assert re.search(rf"exec sh deploy/docker/onsei-supervise celery -A services\.{stage} "
                     rf"worker -Q {stage}\b", run)


@pytest.mark.parametrize("stage", STAGES)
def test_template_runs_only_its_stage(stage: str) -> None:
    text = (REPO / "deploy/skypilot" / f"{stage}.yaml").read_text()
    for other in set(STAGES) - {stage}:
        assert f"services.{other}" not in text and f".[{other}]" not in text


def test_fleet_file() -> None:
    cfg = load_config(REPO / "deploy/fleet.yaml")
    assert set(cfg.targets) == set(STAGES)
    for t in cfg.targets.values():
        assert Path(t.template).is_file(), t.template
        assert "ONSEI_BROKER_URL" in t.env
    assert cfg.targets["asr"].backlog is not None and cfg.targets["tokenize"].count == 8
    assert cfg.provider_cap == 50 and cfg.cap("lambda") == 20
    assert not SECRET_RE.search((REPO / "deploy/fleet.yaml").read_text())
