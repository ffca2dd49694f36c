"""Start/stop real Celery worker processes of tests.common.ops_app for the operations tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_worker(env: dict[str, str], name: str, log: Path) -> subprocess.Popen:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    full.pop("ONSEI_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.common.ops_app", "worker", "-Q", "asr",
         "-c", "1", "-P", "prefork", "--without-gossip", "--without-mingle",
         "--without-heartbeat", "--loglevel=INFO", "-n", f"{name}@%h"],
        cwd=REPO, env=full, stdout=log.open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True,  # own process group: killpg reaches the pool like systemd does
    )


def wait_for(pred, timeout: float, what: str, proc: subprocess.Popen | None = None,
             log: Path | None = None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        if proc is not None and proc.poll() is not None and not pred():
            break
        time.sleep(0.1)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait(10)
