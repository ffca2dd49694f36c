"""Weak answers get clear, quick errors (issue 25, item 9): an S3 endpoint that accepts
connections and never answers (it cost 8 attempts x 60 s before a word), one that refuses them,
and an output whose ``_ledger`` is a symlink to nothing (a bare ``FileExistsError`` on the first
write, "nothing done" on every read)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import pytest

from common.ledger.store import Ledger
from common.storage import StorageError, open_store
from services.stages import PIPELINE
from tests.conftest import free_port
from tests.harness import run_cli

FAKE_AWS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An S3 endpoint that completes every TCP handshake (the kernel's backlog) and never
    sends a byte."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


def _status(endpoint: str, tmp_path, timeout: float = 120):
    env = {**os.environ, **FAKE_AWS, "ONSEI_S3_ENDPOINT_URL": endpoint,
           "ONSEI_S3_CONNECT_TIMEOUT": "2", "ONSEI_S3_READ_TIMEOUT": "5",
           "ONSEI_INPUT_URL": "s3://bucket/raw", "ONSEI_OUTPUT_URL": "s3://bucket/out",
           "ONSEI_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
           "ONSEI_SCRATCH_DIR": str(tmp_path / "scratch")}
    t0 = time.monotonic()
    res = run_cli(["services.ops.cli", "status", "--range", "0-1"], env, timeout=timeout)
    return res, time.monotonic() - t0


def test_a_silent_endpoint_fails_the_first_request_in_seconds(silent_endpoint, tmp_path):
    """With an 8-attempt, 5 s read timeout the old first request took over 40 s; the probe
    gives up after two tries of the 2 s connect timeout and names the endpoint."""
    res, seconds = _status(silent_endpoint, tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 1 and "Traceback" not in out, out[-2000:]
    assert f"S3 endpoint {silent_endpoint} did not answer" in out, out[-2000:]
    assert "ONSEI_S3_ENDPOINT_URL" in out
    assert seconds < 20, f"{seconds:.1f} s: {out[-500:]}"


def test_a_refusing_endpoint_is_named_at_once(tmp_path):
    endpoint = f"http://127.0.0.1:{free_port()}"
    res, seconds = _status(endpoint, tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 1 and f"S3 endpoint {endpoint} did not answer" in out, out[-2000:]
    assert seconds < 20, f"{seconds:.1f} s"


def test_an_endpoint_that_answers_is_not_held_up(s3_bucket, make_settings):
    """Any answer passes the probe: a missing key is still NotFound, a missing bucket its
    own clear error."""
    from common.storage import NotFound

    store = open_store(f"s3://{s3_bucket}/x", make_settings())
    assert not store.exists("nothing-here")
    with pytest.raises(NotFound):
        store.read_bytes("nothing-here")
    other = open_store("s3://no-such-bucket-reli/x", make_settings())
    with pytest.raises(StorageError, match="does not exist"):
        other.read_bytes("k")


@pytest.fixture
def dangling_ledger(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "_ledger").symlink_to(tmp_path / "unmounted-disk" / "ledger")
    return out


def _says_dangling(msg: str, out) -> None:
    assert f"{out}/_ledger is a symlink to " in msg and "which does not exist" in msg, msg


def test_dangling_ledger_symlink_write_is_a_clear_error(dangling_ledger, make_settings):
    s = make_settings(output_url=str(dangling_ledger))
    ledger = Ledger(open_store(s.output_url), s, PIPELINE)
    with pytest.raises(StorageError) as ei:  # was FileExistsError
        ledger.mark_failed("asr", 1, "boom")
    _says_dangling(str(ei.value), dangling_ledger)


@pytest.mark.parametrize("op", ["list", "exists", "write", "put_file"])
def test_dangling_symlink_is_never_read_as_empty(op, dangling_ledger, tmp_path):
    """Read as empty, the ledger would say nothing is done and every shard would be redone."""
    store = open_store(str(dangling_ledger))
    src = tmp_path / "src"
    src.write_bytes(b"x")
    calls = {"list": lambda: list(store.list("_ledger/asr/")),
             "exists": lambda: store.exists("_ledger/asr/shard-000001.json"),
             "write": lambda: store.write_bytes("_ledger/asr/shard-000001.json", b"{}"),
             "put_file": lambda: store.put_file(src, "_ledger/asr/x")}
    with pytest.raises(StorageError) as ei:
        calls[op]()
    _says_dangling(str(ei.value), dangling_ledger)


def test_onsei_status_says_so_in_one_line(dangling_ledger, tmp_path):
    env = {**os.environ, "ONSEI_INPUT_URL": str(tmp_path / "raw"),
           "ONSEI_OUTPUT_URL": str(dangling_ledger),
           "ONSEI_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0"}
    (tmp_path / "raw").mkdir()
    res = run_cli(["services.ops.cli", "status", "--range", "0-1"], env, timeout=120)
    out = res.stdout + res.stderr
    assert res.returncode == 1 and "Traceback" not in out, out[-2000:]
    _says_dangling(out, dangling_ledger)
