"""Shared fixtures: real services on loopback (Redis, moto's S3 server), settings, data dirs.

.ci/run exports ONSEI_TEST_REDIS_URL (+ its pid) / ONSEI_TEST_S3_ENDPOINT for services it
started; otherwise the fixtures start their own. A Redis the tests did not start (a developer's
127.0.0.1:6379) is never used.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Quality annotations cost seconds per shard (docs/quality.md); the tests that check them turn
# them on, the rest of the suite (and the workers it starts) runs without.
os.environ.setdefault("ONSEI_QUALITY_ANNOTATIONS", "false")

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(host: str, port: int, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """URL of a real S3-compatible server over HTTP (moto server mode on loopback)."""
    url = os.environ.get("ONSEI_TEST_S3_ENDPOINT")
    if url:
        yield url
        return
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    if not _wait_port("127.0.0.1", port):
        proc.kill()
        pytest.fail("moto server did not start")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket; AWS_ENDPOINT_URL points at the test server for this test."""
    import boto3

    name = f"t-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("ONSEI_S3_ENDPOINT_URL", s3_endpoint)
    return name


@pytest.fixture
def s3_proxy(s3_endpoint: str):
    """A fault-injecting proxy (tests/faultproxy.py) in front of the S3 server; point a store
    at ``s3_proxy.url`` (e.g. ``make_settings(s3_endpoint_url=s3_proxy.url)``)."""
    from tests.faultproxy import FaultProxy

    with FaultProxy(s3_endpoint) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def inproc_s3():
    """moto's S3 server inside the test process (tests/mototools.py): seed thousands of keys
    straight into its backend, then talk to it over HTTP at ``inproc_s3.url``."""
    from tests.mototools import InProcessS3

    srv = InProcessS3().start()
    yield srv
    srv.stop()


def start_redis_server(workdir: Path) -> tuple[subprocess.Popen, str]:
    """A redis-server of our own: a free loopback port, ``workdir`` as its dir, no persistence.
    Skips the test when redis-server is not installed."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not _wait_port("127.0.0.1", port):
        proc.kill()
        pytest.fail("redis-server did not start")
    return proc, f"redis://127.0.0.1:{port}/0"


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def ci_redis_url() -> str | None:
    """ONSEI_TEST_REDIS_URL, only when it is the server .ci/run started: .ci/run also exports
    that server's pid (ONSEI_TEST_REDIS_PID) and the server must say it is that process. Any
    other Redis (a developer's 127.0.0.1:6379) is never used, let alone flushed."""
    url, pid = os.environ.get("ONSEI_TEST_REDIS_URL"), os.environ.get("ONSEI_TEST_REDIS_PID")
    if not (url and pid):
        return None
    import redis

    try:
        served_by = redis.Redis.from_url(url, socket_timeout=2).info("server")["process_id"]
    except Exception as e:
        raise pytest.UsageError(f"ONSEI_TEST_REDIS_URL does not answer: {e}") from e
    if str(served_by) != pid:
        raise pytest.UsageError(f"ONSEI_TEST_REDIS_URL is served by pid {served_by}, not the "
                                f"redis-server .ci/run started (pid {pid})")
    return url


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real Redis that only this test session uses: a redis-server started here (or the
    private one .ci/run started for this run)."""
    url = ci_redis_url()
    if url:
        yield url
        return
    proc, url = start_redis_server(tmp_path_factory.mktemp("redis"))
    yield url
    stop_server(proc)


def _worker_dbs() -> list[int]:
    """Redis DBs 1-15 split between pytest-xdist workers (gw0, gw1, ...): two tests running at
    once never share (and flush) one DB; a random one of them guards against a straggler."""
    n = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    k = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    return list(range(1 + k % 15, 16, min(n, 15)))


@pytest.fixture
def isolated_redis_url(redis_url: str) -> str:
    """A Redis DB of its own for one test (flushed before): queues never leak between tests."""
    import redis

    base = redis_url.rsplit("/", 1)[0]
    db = random.choice(_worker_dbs())
    url = f"{base}/{db}"
    redis.Redis.from_url(url).flushdb()
    return url


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> Path:
    """``build(dir)`` once per test run, shared by every pytest-xdist worker (a lock beside
    their temp dirs): a model built from a fixed seed is the same in every process."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's dir, above each worker's own
    dest = root / f"built-{name}"
    with open(root / f"built-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / f"built-{name}.done").exists():
            shutil.rmtree(dest, ignore_errors=True)
            build(dest)
            (root / f"built-{name}.done").touch()
    return dest


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ``ONSEI_*`` variable of the calling shell reaches the settings built in the test."""
    for k in list(os.environ):
        if k.startswith("ONSEI_"):
            monkeypatch.delenv(k)
    return monkeypatch


@pytest.fixture
def make_settings(tmp_path: Path):
    """The pipeline's settings (every stage's section) rooted in tmp dirs; keyword overrides
    win."""
    from services.stages import PipelineSettings

    def _make(**overrides):
        base = {
            "input_url": str(tmp_path / "raw"),
            "output_url": str(tmp_path / "out"),
            "scratch_dir": str(tmp_path / "scratch"),
            "model_cache": str(Path(os.environ.get("ONSEI_TEST_MODEL_CACHE",
                                                   Path.home() / ".cache/onsei/models"))),
        }
        base.update(overrides)
        return PipelineSettings(**base)

    return _make

# Private redis-server per test module (tests/harness.py): e2e workers of other runs cannot
# consume its queues.
from tests.harness import private_redis_server, private_redis_url  # noqa: F401


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than the cores (``-n auto``; ``--maxprocesses`` caps it): about a fifth
    of the suite's time is spent waiting on the worker processes, servers and subprocesses its
    tests start, and a third worker fills it (2 cores: 513 -> 471-479 s)."""
    return (os.cpu_count() or 1) + 1


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``needs(...)`` marks (tests/system_packages.py): a missing system package fails the test
    in CI, and skips it elsewhere."""
    from tests.system_packages import require

    for mark in item.iter_markers("needs"):
        require(*mark.args)
