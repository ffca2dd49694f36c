"""docker-compose.yml validates offline (`docker-compose config` needs no daemon) and keeps its
invariants: AOF Redis, Flower on loopback with auth, one GPU worker per stage, secrets from env."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from services.pipeline import PIPELINE

REPO = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose")
pytestmark = pytest.mark.skipif(COMPOSE is None, reason="docker-compose not installed")

SECRETS = {"REDIS_PASSWORD": "s3cret-redis", "FLOWER_BASIC_AUTH": "ops:s3cret-flower"}


def _config(*extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("AWS_", "ONSEI_", "REDIS_", "FLOWER_"))}
    clean.update(env or {})
    return subprocess.run([COMPOSE, "-f", str(REPO / "docker-compose.yml"), *extra, "config"],
                          cwd=REPO, env=clean, capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.fixture(scope="module")
def config() -> dict:
    proc = _config("--profile", "local-s3", env=SECRETS)
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)


def test_services_and_profile(config: dict) -> None:
    assert {"redis", "flower", "asr", "enhance", "tokenize", "minio"} <= set(config["services"])
    # MinIO only with `--profile local-s3`; the default stack needs no S3 of its own
    assert config["services"]["minio"]["profiles"] == ["local-s3"]
    assert "profiles" not in config["services"]["asr"]


@pytest.mark.parametrize("stage", [s.name for s in PIPELINE.specs if s.deploy])
def test_worker_per_stage(config: dict, stage: str) -> None:
    svc = config["services"][stage]
    assert svc["command"][:6] == ["celery", "-A", f"services.{stage}", "worker", "-Q", stage]
    assert svc["build"]["dockerfile"] == f"deploy/docker/Dockerfile.{stage}"
    assert (REPO / svc["build"]["dockerfile"]).is_file()
    dev = svc["deploy"]["resources"]["reservations"]["devices"][0]
    assert dev["driver"] == "nvidia" and dev["capabilities"] == ["gpu"]
    env = svc["environment"]
    assert env["ONSEI_BROKER_URL"] == "redis://:s3cret-redis@redis:6379/0"
    assert env["ONSEI_INPUT_URL"]  # from the env file
    # graceful preemption needs more grace than the soft timeout
    assert svc["stop_grace_period"] in ("120s", "2m", "2m0s")
    assert svc["restart"] in ("unless-stopped", "always")  # a worker that dies comes back
    assert int(env["ONSEI_SHUTDOWN_TIMEOUT"]) < 120
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert env[key] is None  # passed through from the shell, never written


def test_redis_aof_and_password_from_env(config: dict) -> None:
    redis = config["services"]["redis"]
    cmd = " ".join(redis["command"])
    assert "--appendonly yes" in cmd and '"$$REDIS_PASSWORD"' in cmd
    assert "s3cret" not in cmd  # expanded in the container, not in the file
    assert any(str(v).startswith("redis-data:/data") for v in redis["volumes"])


def test_flower_loopback_with_auth(config: dict) -> None:
    flower = config["services"]["flower"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"] == "ops:s3cret-flower"
    assert [str(p) for p in flower["ports"]] == ["127.0.0.1:5555:5555/tcp"]


def test_missing_secret_is_refused() -> None:
    proc = _config(env={"FLOWER_BASIC_AUTH": "a:b"})
    assert proc.returncode != 0
    assert "REDIS_PASSWORD" in proc.stderr


def test_no_secret_in_tracked_files() -> None:
    text = ((REPO / "docker-compose.yml").read_text()
            + (REPO / "deploy/onsei.env.example").read_text())
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        if "PASSWORD" in line or "SECRET" in line:
            assert "${" in line or "$$" in line or line.strip().endswith(":"), line
