"""The hub probe answers at once: offline flag, or an endpoint nobody listens on."""

from __future__ import annotations

import time

import pytest

from common.models import hub
from tests.conftest import free_port


def test_offline_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.hub_unavailable() == "HF_HUB_OFFLINE is set"


def test_unreachable_endpoint_is_reported_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    hub._probe.cache_clear()
    t0 = time.monotonic()
    why = hub.hub_unavailable(timeout=2.0)
    assert why is not None and "cannot reach 127.0.0.1" in why
    assert time.monotonic() - t0 < 2.5  # a refused connection, not a minute of retries


def test_reachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.getsockname()[1]}")
    hub._probe.cache_clear()
    try:
        assert hub.hub_unavailable() is None
    finally:
        srv.close()
        hub._probe.cache_clear()
