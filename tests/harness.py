"""Real worker processes for end-to-end and fault tests.

    env = pipeline_env(redis_url, input_url, output_url, scratch, ONSEI_X="...")
    w = start_worker("services.asr", "asr", env)       # `celery -A services.asr worker -Q asr`
    enqueue(["--range", "0-3"], env)                    # the real enqueue-shards CLI
    wait_done(env, "tokenize", range(4), timeout=120)  # polls the ledger (done records)
    w.kill9()                                           # the whole process group, SIGKILL
    w.stop()                                            # SIGTERM, then SIGKILL after a grace

Fixtures (import them into a test module to use them): ``private_redis_url``, a redis-server of
the module's own (flushed per test), so no other test run's worker can take these messages.

Each worker runs in its own session (process group) so ``kill9`` takes its pool processes too,
like a preempted node. Logs go to a file per worker (``w.log_text()``) for failure messages.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def private_redis_server() -> Iterator[str]:
    """A redis-server of this test module's own on a free port (else the shared one's DB).

    Workers of other test runs on the same machine can never consume these queues.
    """
    import shutil
    import socket

    exe = shutil.which("redis-server")
    if exe is None:
        yield os.environ.get("ONSEI_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def private_redis_url(private_redis_server: str) -> str:
    """The module's private Redis, flushed before each test."""
    import redis

    redis.Redis.from_url(private_redis_server).flushdb()
    return private_redis_server


def pipeline_env(redis_url: str, input_url: str, output_url: str, scratch: str | Path,
                 **extra: str) -> dict[str, str]:
    """Environment for workers and CLIs: one broker, one input, one output, fast retries."""
    env = dict(os.environ)
    env.update({
        "ONSEI_BROKER_URL": redis_url,
        "ONSEI_INPUT_URL": input_url,
        "ONSEI_OUTPUT_URL": output_url,
        "ONSEI_SCRATCH_DIR": str(scratch),
        "ONSEI_VISIBILITY_TIMEOUT": "20",  # a killed worker's shard returns within ~30 s
        "ONSEI_RETRY_BACKOFF_SECONDS": "0.2",
        "ONSEI_MAX_TASK_FAILURES": "3",
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    })
    env.update({k: str(v) for k, v in extra.items()})
    return env


def stop_process(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM (a Celery warm shutdown), then SIGKILL if it has not exited within ``grace``."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@dataclass
class Worker:
    app: str
    queues: str
    proc: subprocess.Popen
    log_path: Path
    name: str
    extra: dict = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL the worker and its pool processes at once (a preempted node)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)

    def stop(self, grace: float = 20.0) -> None:
        if not self.alive:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill9()
        except ProcessLookupError:
            pass

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def start_worker(app: str, queues: str, env: dict[str, str], log_dir: Path | None = None,
                 concurrency: int = 1, extra_args: Iterable[str] = ()) -> Worker:
    """``celery -A <app> worker -Q <queues>`` as a real process in its own process group."""
    name = f"{queues.replace(',', '-')}-{uuid.uuid4().hex[:6]}"
    log_dir = Path(log_dir or env.get("ONSEI_SCRATCH_DIR", "/tmp"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"worker-{name}.log"
    cmd = [sys.executable, "-m", "celery", "-A", app, "worker", "-Q", queues,
           "-c", str(concurrency), "-n", f"{name}@%h", "--loglevel", "INFO",
           "--without-gossip", "--without-mingle", *extra_args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return Worker(app, queues, proc, log_path, name)


def run_cli(args: list[str], env: dict[str, str],
            timeout: float = 120) -> subprocess.CompletedProcess:
    """A console script by module: ``run_cli(["services.enqueue", "--range", "0-3"], env)``."""
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=env, timeout=timeout,
                          capture_output=True, text=True, check=False)


def enqueue(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    res = run_cli(["services.enqueue", *args], env)
    if res.returncode != 0:
        raise AssertionError(f"enqueue-shards failed: {res.stdout}\n{res.stderr}")
    return res


def settings_from(env: dict[str, str]):
    from common.settings import Settings

    keys = {k[len("ONSEI_"):].lower(): v for k, v in env.items() if k.startswith("ONSEI_")}
    fields = set(Settings.model_fields)
    return Settings(**{k: v for k, v in keys.items() if k in fields})


def ledger_for(env: dict[str, str]):
    from common.ledger import Ledger
    from common.storage import open_store
    from services.pipeline import PIPELINE

    s = settings_from(env)
    return Ledger(open_store(s.output_url, s), s, PIPELINE)


def wait_until(pred: Callable[[], bool], timeout: float, interval: float = 0.5,
               workers: Iterable[Worker] = ()) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(interval)
    return pred()


def wait_done(env: dict[str, str], stage: str, ids: Iterable[int], timeout: float,
              workers: Iterable[Worker] = ()) -> set[int]:
    """Poll the ledger until every id has a ``stage`` done record; returns the missing ids."""
    want = set(ids)
    ledger = ledger_for(env)
    missing = want

    def check() -> bool:
        nonlocal missing
        missing = want - ledger.done_ids(stage, want)
        return not missing

    wait_until(check, timeout)
    return missing


def wait_failed(env: dict[str, str], stage: str, shard_id: int, timeout: float,
                dead: bool = True) -> dict | None:
    """Poll for the shard's failure record (dead-lettered when ``dead``)."""
    ledger = ledger_for(env)
    found: dict | None = None

    def check() -> bool:
        nonlocal found
        for rec in ledger.failures(stage):
            if rec.get("shard_id") == shard_id and (rec.get("dead_lettered") or not dead):
                found = rec
                return True
        return False

    wait_until(check, timeout)
    return found


def worker_logs(workers: Iterable[Worker], tail: int = 3000) -> str:
    return "\n".join(f"--- {w.name} ---\n{w.log_text()[-tail:]}" for w in workers)
