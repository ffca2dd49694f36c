"""onsei flower: loopback, basic auth from settings (not on the command line), three queues."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from base64 import b64encode
from pathlib import Path

from tests.conftest import _wait_port, free_port
from tests.harness import stop_process

REPO = Path(__file__).resolve().parents[3]


def _get(url: str, auth: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


def test_flower_behind_auth_on_loopback(private_redis_url: str, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "ONSEI_BROKER_URL": private_redis_url, "ONSEI_FLOWER_PORT": str(port),
           "ONSEI_FLOWER_BASIC_AUTH": "ops:s3cret-pw", "PYTHONPATH": str(REPO)}
    log = tmp_path / "flower.log"  # a file, not a pipe nobody reads: Flower never blocks on it
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.ops.cli", "flower"], cwd=REPO,
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        assert _wait_port("127.0.0.1", port, timeout=60), log.read_text()[-3000:]
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # exec'd in place
        assert b"flower" in cmdline and b"s3cret-pw" not in cmdline
        assert b"--address=127.0.0.1" in cmdline
        assert _get(f"http://127.0.0.1:{port}/")[0] == 401
        assert _get(f"http://127.0.0.1:{port}/", "ops:wrong")[0] == 401
        code, page = _get(f"http://127.0.0.1:{port}/broker", "ops:s3cret-pw")
        assert code == 200 and all(f'<tr id="{q}">' in page for q in ("asr", "enhance",
                                                                       "tokenize")), page
    finally:
        stop_process(proc, group=True)  # a loaded machine may take Flower a while to stop


def test_broker_page_lists_every_stage_queue_while_workers_are_online() -> None:
    """Flower lists only the online workers' queues: with an asr worker alone, tokenize (where
    the backlog is) was missing from the Broker page."""
    from types import SimpleNamespace

    from flower.views import BaseHandler

    import services.ops.flower

    services.ops.flower.list_every_stage_queue()  # idempotent
    handler = SimpleNamespace(
        application=SimpleNamespace(workers={"asr@h": {"active_queues": [{"name": "asr"}]}}),
        capp=services.ops.flower.app)
    assert BaseHandler.get_active_queue_names(handler) == ["asr", "enhance", "tokenize"]


def _flower_cli(monkeypatch, **env: str):
    from click.testing import CliRunner

    from services.ops.cli import cli

    def no_exec(*a):  # the checks must stop it before Flower would replace this process
        raise AssertionError(f"Flower was started: {a[:2]}")

    monkeypatch.setattr(os, "execvpe", no_exec)
    for k in ("ONSEI_FLOWER_BASIC_AUTH", "ONSEI_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    return CliRunner().invoke(cli, ["flower"], env=env)


def test_refuses_to_start_without_a_password_of_its_own(monkeypatch) -> None:
    for auth in (None, "onsei:change-me", "ops:", "ops"):
        res = _flower_cli(monkeypatch, **({"ONSEI_FLOWER_BASIC_AUTH": auth} if auth else {}))
        assert res.exit_code == 1, res.output
        assert res.output.startswith("Error: set ONSEI_FLOWER_BASIC_AUTH=user:password first")


def test_busy_port_and_http_broker_are_one_line(monkeypatch) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = _flower_cli(monkeypatch, ONSEI_FLOWER_BASIC_AUTH="ops:pw-13",
                          ONSEI_FLOWER_PORT=str(port))
    assert res.exit_code == 1 and res.output == (
        f"Error: cannot listen on 127.0.0.1:{port}: Address already in use (another Flower? "
        "choose --port or ONSEI_FLOWER_PORT)\n"), res.output
    res = _flower_cli(monkeypatch, ONSEI_FLOWER_BASIC_AUTH="ops:pw-13",
                      ONSEI_BROKER_URL="http://127.0.0.1:5555/")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.startswith("Error: ONSEI_BROKER_URL: the broker URL must start with "
                                 "one of redis://"), res.output
