"""Tests only use servers they started: never a developer's Redis on 127.0.0.1:6379."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis

from tests.conftest import ci_redis_url


def _server(url: str) -> tuple[int, str]:
    r = redis.Redis.from_url(url)
    return int(r.info("server")["process_id"]), r.config_get("dir")["dir"]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_session_redis_is_ours(redis_url: str, tmp_path_factory) -> None:
    pid, workdir = _server(redis_url)
    if os.environ.get("ONSEI_TEST_REDIS_PID"):  # .ci/run started it for this run
        assert str(pid) == os.environ["ONSEI_TEST_REDIS_PID"]
    else:
        assert _parent(pid) == os.getpid(), "a Redis this session did not start"
        assert Path(workdir).is_relative_to(tmp_path_factory.getbasetemp().resolve())


def test_private_redis_is_ours(private_redis_url: str) -> None:
    pid, workdir = _server(private_redis_url)
    assert _parent(pid) == os.getpid()
    assert "redis" in Path(workdir).name


def test_foreign_redis_url_is_ignored_or_refused(monkeypatch, private_redis_url: str) -> None:
    monkeypatch.setenv("ONSEI_TEST_REDIS_URL", private_redis_url)
    monkeypatch.delenv("ONSEI_TEST_REDIS_PID", raising=False)
    assert ci_redis_url() is None  # no marker: not .ci/run's server, not used
    monkeypatch.setenv("ONSEI_TEST_REDIS_PID", "1")
    with pytest.raises(pytest.UsageError, match="not the redis-server .ci/run started"):
        ci_redis_url()
    pid, _ = _server(private_redis_url)
    monkeypatch.setenv("ONSEI_TEST_REDIS_PID", str(pid))
    assert ci_redis_url() == private_redis_url
