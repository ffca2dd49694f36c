"""onsei flower: loopback, basic auth from settings (not on the command line), three queues."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from base64 import b64encode
from pathlib import Path

from tests.conftest import _wait_port, free_port

REPO = Path(__file__).resolve().parents[2]


def _get(url: str, auth: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


def test_flower_behind_auth_on_loopback(private_redis_url: str) -> None:
    port = free_port()
    env = {**os.environ, "ONSEI_BROKER_URL": private_redis_url, "ONSEI_FLOWER_PORT": str(port),
           "ONSEI_FLOWER_BASIC_AUTH": "ops:s3cret-pw", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "flower"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        assert _wait_port("127.0.0.1", port, timeout=60), "Flower did not start"
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # exec'd in place
        assert b"flower" in cmdline and b"s3cret-pw" not in cmdline
        assert b"--address=127.0.0.1" in cmdline
        assert _get(f"http://127.0.0.1:{port}/")[0] == 401
        assert _get(f"http://127.0.0.1:{port}/", "ops:wrong")[0] == 401
        code, page = _get(f"http://127.0.0.1:{port}/broker", "ops:s3cret-pw")
        assert code == 200 and all(q in page for q in ("asr", "enhance", "tokenize"))
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(10)
        time.sleep(0.1)
