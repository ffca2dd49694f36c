"""Dashboards and metrics listen on loopback unless configured; Flower asks for a password."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from common.settings import Settings
from tests.conftest import free_port
from tests.harness import REPO, stop_process
from tests.reliability.servers import wait_port


def _external_ip() -> str | None:
    """A non-loopback address of this host (a listener on 127.0.0.1 must not answer there)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.255", 9))  # no packet is sent for UDP connect
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def test_defaults_are_loopback():
    s = Settings()
    assert s.flower_host == "127.0.0.1" and s.metrics_host == "127.0.0.1"
    assert s.metrics_port == 0  # metrics off unless asked for


def test_metrics_endpoint_bound_to_loopback():
    from common.queue.metrics import serve

    port = free_port()
    server = serve(Settings().metrics_host, port)
    try:
        assert server.server_address[0] == "127.0.0.1"
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        assert b"python_info" in body or b"# HELP" in body
        ext = _external_ip()
        if ext:
            assert not _reachable(ext, port)
    finally:
        server.shutdown()


def test_flower_command_is_loopback_and_keeps_password_off_argv():
    from services.ops.flower import flower_command, flower_env

    s = Settings(flower_basic_auth="ops:hunter2-secret")
    cmd = flower_command(s.flower_host, s.flower_port)
    assert "--address=127.0.0.1" in cmd
    assert not any("hunter2" in a for a in cmd)  # `ps` shows argv, not the environment
    assert flower_env(s.flower_basic_auth.get_secret_value(), {})["FLOWER_BASIC_AUTH"] == \
        "ops:hunter2-secret"


def test_flower_live_requires_auth_and_listens_on_loopback(isolated_redis_url, tmp_path):
    port = free_port()
    env = {**os.environ, "ONSEI_BROKER_URL": isolated_redis_url,
           "ONSEI_FLOWER_BASIC_AUTH": "ops:flower-pw-123", "ONSEI_FLOWER_PORT": str(port),
           "PYTHONPATH": str(REPO)}
    log = open(tmp_path / "flower.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "services.ops.cli", "flower"], cwd=REPO, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not wait_port(port, timeout=60):
            pytest.fail("flower did not start: " + (tmp_path / "flower.log").read_text()[-2000:])
        url = f"http://127.0.0.1:{port}/api/workers"
        with pytest.raises(urllib.error.HTTPError) as ei:
            urllib.request.urlopen(url, timeout=10)
        assert ei.value.code == 401
        token = base64.b64encode(b"ops:flower-pw-123").decode()
        req = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
        deadline = time.monotonic() + 20
        while True:
            try:
                assert urllib.request.urlopen(req, timeout=10).status == 200
                break
            except urllib.error.URLError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        ext = _external_ip()
        if ext:
            assert not _reachable(ext, port)
    finally:
        stop_process(proc, 10)
        log.close()
    assert "flower-pw-123" not in (tmp_path / "flower.log").read_text(errors="replace")
