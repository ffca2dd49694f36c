"""Worker images: CUDA runtime bases, one stage's extra each; the entrypoint starts CUDA MPS
only when asked and execs the worker (so SIGTERM reaches it)."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from services.pipeline import PIPELINE

REPO = Path(__file__).resolve().parents[2]
ENTRY = REPO / "deploy/docker/entrypoint.sh"
# every stage with deploy entries (its spec says where its workers run)
STAGES = tuple(s.name for s in PIPELINE.specs if s.deploy)


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


SUPERVISE = REPO / "deploy/docker/onsei-supervise"


def test_supervise_restarts_a_worker_that_dies(tmp_path: Path) -> None:
    """A worker that dies (exit 1, as on kombu's "Unrecoverable error") is
    started again, with back-off, until it exits 0."""
    runs = tmp_path / "runs"
    cmd = f'echo run >> {runs}; [ "$(wc -l < {runs})" -ge 3 ]'
    proc = subprocess.run(["sh", str(SUPERVISE), "sh", "-c", cmd], capture_output=True,
                          text=True, timeout=30, check=False,
                          env={"PATH": "/usr/bin:/bin", "ONSEI_RESTART_DELAY": "0"})
    assert proc.returncode == 0, proc.stderr
    assert runs.read_text().count("run") == 3
    assert proc.stderr.count("restarting in") == 2 and "status 1" in proc.stderr
    assert os.access(SUPERVISE, os.X_OK)


def test_supervise_forwards_sigterm_and_stops(tmp_path: Path) -> None:
    started, got = tmp_path / "started", tmp_path / "got"
    worker = (f'trap "echo term >> {got}; exit 143" TERM; echo up >> {started}; '
              'while :; do sleep 0.1; done')
    proc = subprocess.Popen(["sh", str(SUPERVISE), "sh", "-c", worker],
                            env={"PATH": "/usr/bin:/bin"}, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 10
        while not started.exists() and time.monotonic() < end:
            time.sleep(0.05)
        assert started.exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 143  # the worker's own status, and no restart
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert got.read_text() == "term\n" and started.read_text() == "up\n"


def test_entrypoint_runs_the_worker_under_supervise() -> None:
    assert 'exec sh "$(dirname "$0")/onsei-supervise" "$@"' in ENTRY.read_text()
    for stage in STAGES:
        text = (REPO / f"deploy/docker/Dockerfile.{stage}").read_text()
        assert "COPY deploy/docker/onsei-supervise /usr/local/bin/onsei-supervise" in text
