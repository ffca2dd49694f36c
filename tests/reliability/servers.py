"""Private, disposable servers on loopback for fault and security tests.

A test that restarts, wipes or password-protects Redis must never touch the shared instance:
:class:`RedisServer` runs its own ``redis-server`` on a free port (optionally with a password
and TLS) and can be killed, restarted and wiped at will.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.conftest import free_port


def wait_port(port: int, timeout: float = 15.0, host: str = "127.0.0.1") -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection((host, port), timeout=0.3):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def make_tls_files(d: Path) -> dict[str, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 / localhost (openssl CLI)."""
    d.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, crt = (d / n for n in ("ca.key", "ca.pem", "srv.key", "srv.csr",
                                                  "srv.pem"))
    ext = d / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=onsei-test-ca",
        "-keyout", str(ca_key), "-out", str(ca))
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", str(key),
        "-out", str(csr))
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", "2", "-out", str(crt), "-extfile", str(ext))
    return {"ca": ca, "cert": crt, "key": key}


class RedisServer:
    """``redis-server`` on a free loopback port; no persistence (a restart is a wipe) unless
    ``persist`` (an outage, not a loss: queues and unacked messages come back)."""

    def __init__(self, workdir: Path, password: str | None = None,
                 tls: dict[str, Path] | None = None, persist: bool = False) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("redis-server is not installed")
        self.exe = exe
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.password = password
        self.tls = tls
        self.persist = persist  # an append-only file fsynced per write: a restart keeps data
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        scheme = "rediss" if self.tls else "redis"
        auth = f":{self.password}@" if self.password else ""
        return f"{scheme}://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        aof = ["--appendonly", "yes", "--appendfsync", "always"] if self.persist else \
            ["--appendonly", "no"]
        args = [self.exe, "--bind", "127.0.0.1", "--save", "", *aof,
                "--dir", str(self.workdir), "--protected-mode", "yes"]
        if self.tls:
            args += ["--port", "0", "--tls-port", str(self.port),
                     "--tls-cert-file", str(self.tls["cert"]),
                     "--tls-key-file", str(self.tls["key"]),
                     "--tls-ca-cert-file", str(self.tls["ca"]), "--tls-auth-clients", "no"]
        else:
            args += ["--port", str(self.port)]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port):
            self.stop()
            raise RuntimeError("private redis-server did not start")
        return self

    def stop(self, hard: bool = False) -> None:
        if self.proc is None:
            return
        if hard:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None

    def restart_wiped(self) -> None:
        """Kill -9 and start empty on the same port: every queue, counter and lock is gone."""
        self.stop(hard=True)
        self.start()

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def __enter__(self) -> RedisServer:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
