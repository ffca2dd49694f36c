"""A small threaded HTTP reverse proxy on loopback that injects faults in front of a server.

Used in front of moto's S3 server to test retries, resumes and timeouts over real sockets::

    with FaultProxy(s3_endpoint) as proxy:             # proxy.url -> point the client here
        proxy.set_fault("status", status=500, count=2)  # the next 2 requests get HTTP 500
        proxy.set_fault("drop", methods={"GET"}, skip=3, drop_after=1000)
        proxy.set_fault("delay", delay=2.0, rate=0.5)   # half the requests wait 2 s first
        proxy.set_fault("reset", path_contains="/bucket/key")  # close without answering
        proxy.set_cycle([{"mode": "status", "status": 500}, {"mode": "reset"}], every=4)
        proxy.clear()
        proxy.counts["GET"], proxy.injected["status"], proxy.log[-1]

Matching: a request matches when its method is in ``methods`` (all when None) and its path+query
contains ``path_contains``. Of the matching requests the first ``skip`` pass through; after that
each is faulted (with probability ``rate`` when given) until ``count`` faults were injected
(no limit when None).

``set_cycle`` counts requests instead of time: every ``every``-th request gets the next fault of
the plan (a fault limited to some methods waits for the next such request), so how many faults a
run meets depends on how many requests it makes, never on how fast the machine is.
"""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import urlparse

Mode = Literal["status", "delay", "drop", "reset"]
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "trailer",
        "transfer-encoding", "upgrade", "expect", "content-length"}
_S3_CODES = {500: "InternalError", 503: "SlowDown", 403: "AccessDenied", 404: "NoSuchKey"}


@dataclass
class Fault:
    mode: Mode
    status: int = 503
    code: str | None = None
    delay: float = 0.0
    drop_after: int | None = None  # body bytes sent before the cut (None: half the body)
    count: int | None = None
    rate: float | None = None
    skip: int = 0
    methods: frozenset[str] | None = None
    path_contains: str = ""
    matched: int = 0
    fired: int = 0


class FaultProxy:
    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0) -> None:
        u = urlparse(upstream)
        self.upstream = (u.hostname or "127.0.0.1", u.port or 80)
        self._lock = threading.Lock()
        self._fault: Fault | None = None
        self._cycle: list[Fault] = []
        self._every = 0
        self._since = 0  # requests since the last fault of the cycle
        self._turn = 0  # faults of the cycle injected so far
        self.counts: Counter[str] = Counter()  # requests seen, by method
        self.injected: Counter[str] = Counter()  # faults injected, by mode
        self.log: list[tuple[str, str, str]] = []  # (method, path, outcome)
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="faultproxy")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- control --------------------------------------------------------------------------
    def set_fault(self, mode: Mode, *, status: int = 503, code: str | None = None,
                  delay: float = 0.0, drop_after: int | None = None, count: int | None = None,
                  rate: float | None = None, skip: int = 0, methods: set[str] | None = None,
                  path_contains: str = "") -> None:
        with self._lock:
            self._fault = Fault(mode, status, code, delay, drop_after, count, rate, skip,
                                frozenset(m.upper() for m in methods) if methods else None,
                                path_contains)

    def set_cycle(self, plan: list[dict], every: int) -> None:
        """Fault every ``every``-th request with the next entry of ``plan`` (``set_fault``
        keyword arguments with ``mode``), in turn, until ``clear``."""
        faults = []
        for p in plan:
            p = dict(p)
            methods = p.pop("methods", None)
            faults.append(Fault(p.pop("mode"), **p, methods=frozenset(
                m.upper() for m in methods) if methods else None))
        with self._lock:
            self._fault, self._cycle, self._every = None, faults, every
            self._since = self._turn = 0

    def clear(self) -> None:
        with self._lock:
            self._fault = None
            self._cycle = []

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.injected.clear()
            self.log.clear()

    def requests(self, method: str | None = None, path_contains: str = "") -> int:
        """How many requests were seen with this method and path substring."""
        with self._lock:
            return sum(1 for m, p, _ in self.log
                       if (method is None or m == method) and path_contains in p)

    def _decide(self, method: str, path: str) -> Fault | None:
        with self._lock:
            self.counts[method] += 1
            if self._cycle:
                return self._next_in_cycle(method)
            f = self._fault
            if f is None or (f.methods and method not in f.methods) or f.path_contains not in path:
                return None
            f.matched += 1
            if f.matched <= f.skip or (f.count is not None and f.fired >= f.count):
                return None
            if f.rate is not None and random.random() >= f.rate:
                return None
            f.fired += 1
            self.injected[f.mode] += 1
            return f

    def _next_in_cycle(self, method: str) -> Fault | None:
        self._since += 1
        f = self._cycle[self._turn % len(self._cycle)]
        if self._since < self._every or (f.methods and method not in f.methods):
            return None
        self._since = 0
        self._turn += 1
        f.fired += 1
        self.injected[f.mode] += 1
        return f

    def _record(self, method: str, path: str, outcome: str) -> None:
        with self._lock:
            self.log.append((method, path, outcome))


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue for large PUTs
        timeout = 30
        _up: http.client.HTTPConnection | None = None

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                out = bytearray()
                while True:
                    n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if n == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return bytes(out)
                    out += self.rfile.read(n)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _forward(self, body: bytes) -> tuple[http.client.HTTPResponse, bytes]:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            for attempt in range(2):  # a kept-alive upstream socket may have gone stale
                if self._up is None:
                    self._up = http.client.HTTPConnection(*proxy.upstream, timeout=120)
                try:
                    self._up.request(self.command, self.path, body=body, headers=headers)
                    resp = self._up.getresponse()
                    return resp, resp.read()
                except (OSError, http.client.HTTPException):
                    self._up.close()
                    self._up = None
                    if attempt:
                        raise
            raise AssertionError("unreachable")

        def _send(self, status: int, headers: list[tuple[str, str]], body: bytes,
                  length: int | None = None) -> None:
            self.send_response_only(status)
            for k, v in headers:
                if k.lower() not in _HOP:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()

        def _handle(self) -> None:
            method, path = self.command, self.path
            fault = proxy._decide(method, path)
            body = self._read_body()
            if fault is not None and fault.mode == "reset":
                proxy._record(method, path, "reset")
                self._cut()
                return
            if fault is not None and fault.mode == "status":
                proxy._record(method, path, f"status {fault.status}")
                code = fault.code or _S3_CODES.get(fault.status, "InternalError")
                xml = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                       f"<Message>injected by faultproxy</Message></Error>").encode()
                self._send(fault.status, [("Content-Type", "application/xml")],
                           b"" if method == "HEAD" else xml, len(xml))
                if method != "HEAD":
                    self.wfile.write(xml)
                return
            if fault is not None and fault.mode == "delay":
                time.sleep(fault.delay)
            resp, data = self._forward(body)
            headers = resp.getheaders()
            length = int(resp.getheader("Content-Length") or 0) if method == "HEAD" else None
            if fault is not None and fault.mode == "drop":
                proxy._record(method, path, "drop")
                cut = len(data) // 2 if fault.drop_after is None else fault.drop_after
                self._send(resp.status, headers, data, length)
                self.wfile.write(data[: min(cut, len(data))])
                self.wfile.flush()
                self._cut()
                return
            proxy._record(method, path, f"{resp.status}")
            try:
                self._send(resp.status, headers, data, length)
                if method != "HEAD":
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                self.close_connection = True

        def _cut(self) -> None:
            """Close abruptly (RST), as a dying peer or middlebox would."""
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

    return Handler
