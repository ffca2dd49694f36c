"""A private redis-server for tests that run real workers: the shared Redis's 14 DBs are used
by every engineer's tests at once, and another worker on the same DB would take our messages.
Import the fixture into a test module: ``from tests.ops_redis import private_redis_url``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import _wait_port, free_port


@pytest.fixture(scope="module")
def _private_redis_server() -> Iterator[str]:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    if not _wait_port("127.0.0.1", port):
        proc.kill()
        pytest.fail("private redis-server did not start")
    yield f"redis://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def private_redis_url(_private_redis_server: str) -> str:
    """DB 0 of a Redis only this module uses, flushed before each test."""
    import redis

    url = f"{_private_redis_server}/0"
    redis.Redis.from_url(url).flushdb()
    return url
