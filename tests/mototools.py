"""moto's S3 server run inside the test process, so tests can seed thousands of keys straight
into its backend (milliseconds) and still talk to it over real HTTP like any other S3."""

from __future__ import annotations

from collections.abc import Iterable


class InProcessS3:
    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.url = ""

    def start(self) -> InProcessS3:
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.stop()

    @staticmethod
    def _backend():  # moto's S3Backend
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        return s3_backends[DEFAULT_ACCOUNT_ID]["aws"]

    def create_bucket(self, name: str) -> str:
        self._backend().create_bucket(name, "us-east-1")
        return name

    def put_keys(self, bucket: str, keys: Iterable[str], body: bytes = b"{}") -> int:
        """Seed objects without any HTTP request (what 50,000 PUTs would cost minutes for)."""
        backend = self._backend()
        n = 0
        for key in keys:
            backend.put_object(bucket, key, body)
            n += 1
        return n

