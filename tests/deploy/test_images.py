"""Worker images: CUDA runtime bases, one stage's extra each; the entrypoint starts CUDA MPS
only when asked and execs the worker (so SIGTERM reaches it)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENTRY = REPO / "deploy/docker/entrypoint.sh"
STAGES = ("asr", "enhance", "tokenize")


@pytest.mark.parametrize("stage", STAGES)
def test_dockerfile(stage: str) -> None:
    text = (REPO / f"deploy/docker/Dockerfile.{stage}").read_text()
    assert re.search(r"^FROM nvidia/cuda:\S+-runtime-ubuntu", text, re.MULTILINE)
    extras = set(re.findall(r'"\.\[([\w,-]+)\]"', text))
    assert extras == {stage}, extras  # only its own model stack
    assert f'"celery", "-A", "services.{stage}", "worker", "-Q", "{stage}"' in text
    assert 'ENTRYPOINT ["/usr/local/bin/onsei-entrypoint"]' in text and "USER onsei" in text


def test_dockerignore_keeps_secrets_and_bulk_out() -> None:
    lines = set((REPO / ".dockerignore").read_text().split())
    assert {".git", "data", "tests", ".env", "deploy/*.env"} <= lines


def _run(tmp_path: Path, env: dict[str, str], with_mps: bool) -> subprocess.CompletedProcess:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    if with_mps:
        fake = bindir / "nvidia-cuda-mps-control"
        fake.write_text(f'#!/bin/sh\necho "mps $*" >> {tmp_path}/calls\n'
                        '[ "$1" = "-d" ] || exit 1\n')
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    full = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path),
            "CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "pipe"),
            "CUDA_MPS_LOG_DIRECTORY": str(tmp_path / "log"), **env}
    return subprocess.run(["sh", str(ENTRY), "sh", "-c", "echo worker $$ $CUDA_MPS_PIPE_DIRECTORY"],
                          env=full, capture_output=True, text=True, timeout=30, check=False)


def test_entrypoint_starts_mps_when_asked(tmp_path: Path) -> None:
    proc = _run(tmp_path, {"ONSEI_CUDA_MPS": "1"}, with_mps=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "calls").read_text().splitlines()[-1] == "mps -d"
    assert proc.stdout.startswith("worker ") and str(tmp_path / "pipe") in proc.stdout
    assert (tmp_path / "pipe").is_dir()


def test_entrypoint_without_mps(tmp_path: Path) -> None:
    proc = _run(tmp_path, {"ONSEI_CUDA_MPS": "0"}, with_mps=True)
    assert proc.returncode == 0 and proc.stdout.startswith("worker ")
    assert not (tmp_path / "calls").exists()


def test_entrypoint_mps_missing_is_a_clear_error(tmp_path: Path) -> None:
    proc = _run(tmp_path, {"ONSEI_CUDA_MPS": "1"}, with_mps=False)
    assert proc.returncode == 78 and "nvidia-cuda-mps-control" in proc.stderr
    assert "worker" not in proc.stdout
    assert os.access(ENTRY, os.X_OK)
