"""Real worker processes for end-to-end and fault tests.

    env = pipeline_env(redis_url, input_url, output_url, scratch, ONSEI_X="...")
    w = start_worker("services.asr", "asr", env)       # `celery -A services.asr worker -Q asr`
    enqueue(["--range", "0-3"], env)                    # the real enqueue-shards CLI
    wait_done(env, "tokenize", range(4), 120, [w])     # polls the ledger (done records)
    w.kill9()                                           # the whole process group, SIGKILL
    w.stop()                                            # SIGTERM, then SIGKILL after a grace

Fixtures (import them into a test module to use them): ``private_redis_url``, a redis-server of
the module's own (flushed per test), so no other test run's worker can take these messages.

A wait stops as soon as the outcome is known: ``wait_done`` fails at once (AssertionError with
the reason and the log tails) when one of its shards is dead-lettered at any stage up to the one
awaited, or when one of the given workers exits without the test stopping it.

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

from common.ledger.records import FailureRecord

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def private_redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this test module's own on a free port and in a dir of its own.

    Workers of other test runs on the same machine can never consume these queues.
    """
    from tests.conftest import start_redis_server, stop_server

    proc, url = start_redis_server(tmp_path_factory.mktemp("redis"))
    yield url
    stop_server(proc)


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


def stop_process(proc: subprocess.Popen, grace: float = 30.0, group: bool = False) -> None:
    """SIGTERM (a Celery warm shutdown), then SIGKILL if it has not exited within ``grace``;
    ``group``: to its whole process group (started with ``start_new_session``)."""
    def send(sig: int) -> None:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)

    send(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait(10)


@dataclass
class Worker:
    app: str
    queues: str
    proc: subprocess.Popen
    log_path: Path
    name: str
    extra: dict = field(default_factory=dict)
    stopped: bool = False  # the test ended it on purpose (kill9 / stop): not a failure

    def exit_reason(self) -> str | None:
        """Why waiting on this worker is pointless: it exited without the test stopping it."""
        rc = self.proc.poll()
        if rc is None or self.stopped:
            return None
        return f"worker {self.name} exited with code {rc}:\n{self.log_text()[-3000:]}"

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL the worker and its pool processes at once (a preempted node)."""
        self.stopped = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)

    def stop(self, grace: float = 20.0) -> None:
        self.stopped = True
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
    """A console script by module: ``run_cli(["services.ops.enqueue", "--range", "0-3"], env)``."""
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=env, timeout=timeout,
                          capture_output=True, text=True, check=False)


def enqueue(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    res = run_cli(["services.ops.enqueue", *args], env)
    if res.returncode != 0:
        raise AssertionError(f"enqueue-shards failed: {res.stdout}\n{res.stderr}")
    return res


def settings_from(env: dict[str, str]):
    from services.stages import PipelineSettings

    keys = {k[len("ONSEI_"):].lower(): v for k, v in env.items() if k.startswith("ONSEI_")}
    fields = set(PipelineSettings.model_fields)
    return PipelineSettings(**{k: v for k, v in keys.items() if k in fields})


def ledger_for(env: dict[str, str]):
    from common.ledger.store import Ledger
    from common.storage import open_store
    from services.stages import PIPELINE

    s = settings_from(env)
    return Ledger(open_store(s.output_url, s), s, PIPELINE)


class WaitAborted(AssertionError):
    """A wait ended early: its outcome was already known (a dead letter, a worker gone)."""


def wait_until(pred: Callable[[], bool], timeout: float, interval: float = 0.5,
               workers: Iterable[Worker] = (),
               abort: Callable[[], str | None] | None = None) -> bool:
    """Poll ``pred`` until true or ``timeout``; raise :class:`WaitAborted` as soon as one of
    ``workers`` exits unasked or ``abort`` returns a reason."""
    workers = list(workers)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        reasons = [r for r in (w.exit_reason() for w in workers) if r]
        if abort is not None and (why := abort()):
            reasons.insert(0, why)
        if reasons:
            raise WaitAborted("\n".join(reasons))
        time.sleep(interval)
    return pred()


def dead_letters(env: dict[str, str], stage: str, ids: Iterable[int]) -> Callable[[], str | None]:
    """An ``abort`` check: the dead-lettered shards among ``ids`` at ``stage`` or before it."""
    from services.stages import STAGES

    want = set(ids)
    ledger = ledger_for(env)
    stages = STAGES[: STAGES.index(stage) + 1]

    def check() -> str | None:
        dead = [f"{st} shard {r.shard_id} dead-lettered after {r.attempts} tries: "
                f"{r.reason}" for st in stages for r in ledger.failures(st)
                if r.dead_lettered and r.shard_id in want]
        return "\n".join(dead) or None

    return check


def wait_done(env: dict[str, str], stage: str, ids: Iterable[int], timeout: float,
              workers: Iterable[Worker] = ()) -> set[int]:
    """Poll the ledger until every id has a ``stage`` done record; returns the missing ids.
    Fails at once when one of them is dead-lettered or one of ``workers`` exits unasked."""
    want = set(ids)
    ledger = ledger_for(env)
    missing = want

    def check() -> bool:
        nonlocal missing
        missing = want - ledger.done_ids(stage, want)
        return not missing

    wait_until(check, timeout, workers=workers, abort=dead_letters(env, stage, want))
    return missing


def wait_failed(env: dict[str, str], stage: str, shard_id: int, timeout: float,
                dead: bool = True, workers: Iterable[Worker] = ()) -> FailureRecord | None:
    """Poll for the shard's failure record (dead-lettered when ``dead``)."""
    ledger = ledger_for(env)
    found: FailureRecord | None = None

    def check() -> bool:
        nonlocal found
        for rec in ledger.failures(stage):
            if rec.shard_id == shard_id and (rec.dead_lettered or not dead):
                found = rec
                return True
        return False

    wait_until(check, timeout, workers=workers)
    return found


def worker_logs(workers: Iterable[Worker], tail: int = 3000) -> str:
    return "\n".join(f"--- {w.name} ---\n{w.log_text()[-tail:]}" for w in workers)
