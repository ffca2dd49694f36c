"""Passwords and keys are supported (``rediss://user:pw@``) and never printed: not by
``onsei config``, not in log records, not in ledger failure records, not in CLI error messages."""

from __future__ import annotations

import io
import json
import logging
import ssl
import uuid

import pytest
from click.testing import CliRunner

from common.ledger.store import Ledger
from common.queue.config import celery_config
from common.redact import RedactingFilter, install_log_redaction, redact_text
from common.settings import Settings
from common.storage import open_store
from services.stages import PIPELINE, make_app
from tests.conftest import free_port
from tests.harness import run_cli

PW = "Sup3r-" + uuid.uuid4().hex[:12]


def _secret_env(monkeypatch) -> None:
    monkeypatch.setenv("ONSEI_BROKER_URL", f"rediss://onsei:{PW}@redis.example:6380/0")
    monkeypatch.setenv("ONSEI_FLOWER_BASIC_AUTH", f"admin:{PW}x")
    monkeypatch.setenv("ONSEI_INPUT_URL", "s3://bucket/raw")


@pytest.mark.parametrize("as_json", [False, True])
def test_onsei_config_hides_secrets(monkeypatch, as_json):
    from services.ops.cli import cli

    _secret_env(monkeypatch)
    res = CliRunner().invoke(cli, ["config", *(["--json"] if as_json else [])])
    assert res.exit_code == 0, res.output
    assert PW not in res.output
    assert "rediss://onsei:***@redis.example:6380/0" in res.output  # still useful, not secret
    assert "s3://bucket/raw" in res.output


def test_yaml_config_secret_hidden(monkeypatch, tmp_path):
    from services.ops.cli import cli

    cfg = tmp_path / "onsei.yaml"
    cfg.write_text(f"broker_url: redis://:{PW}@10.0.0.5:6379/2\n")
    monkeypatch.setenv("ONSEI_CONFIG", str(cfg))
    monkeypatch.delenv("ONSEI_BROKER_URL", raising=False)
    res = CliRunner().invoke(cli, ["config"])
    assert res.exit_code == 0 and PW not in res.output and "10.0.0.5" in res.output


def test_settings_repr_hides_secret():
    s = Settings(broker_url=f"redis://:{PW}@h:1/0")
    assert PW not in repr(s) and PW not in str(s.model_dump())


def test_rediss_turns_on_verified_tls():
    cfg = celery_config(Settings(broker_url=f"rediss://:{PW}@h:6380/0"))
    assert cfg["broker_use_ssl"]["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    app = make_app("probe", Settings(broker_url=f"rediss://:{PW}@h:6380/0"))
    assert app.conf.broker_use_ssl["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    assert PW not in app.connection_for_write().as_uri()


def test_ledger_failure_record_redacted(tmp_path):
    s = Settings(output_url=str(tmp_path / "out"))
    store = open_store(s.output_url)
    ledger = Ledger(store, s, PIPELINE)
    ledger.mark_failed("asr", 7, f"ConnectionError: redis://:{PW}@10.1.1.1:6379/0 refused",
                       traceback=f"boto: aws_secret_access_key={PW}\n  password: {PW}\n")
    raw = b"".join(store.read_bytes(k) for k in store.list("_ledger/_failed/"))
    assert raw and PW.encode() not in raw
    rec = ledger.failures("asr")[0]
    assert "10.1.1.1" in rec.reason  # the rest of the message stays


@pytest.mark.parametrize("text", [
    f"redis://:{PW}@host:6379/0", f"rediss://user:{PW}@host/1", f"amqp://u:{PW}@mq//",
    f"password={PW}", f"AWS_SECRET_ACCESS_KEY={PW}", f"'secret': '{PW}'", f"token: {PW}",
    f"https://user:{PW}@minio.local/bucket",
], ids=lambda t: t.replace(PW, "PW"))  # the same ids in every pytest-xdist worker
def test_redact_text_forms(text):
    assert PW not in redact_text(f"failed: {text} (retrying)")


def test_log_records_redacted():
    buf = io.StringIO()
    logger = logging.getLogger(f"onsei-test-{uuid.uuid4().hex}")
    logger.propagate = False
    handler = logging.StreamHandler(buf)
    logger.addHandler(handler)
    install_log_redaction(logger)
    install_log_redaction(logger)
    assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1  # idempotent
    logger.error("broker %s down", f"redis://:{PW}@h:6379/0")
    try:
        raise ConnectionError(f"cannot reach rediss://a:{PW}@h:6380")
    except ConnectionError:
        logger.exception("shard failed")
    out = buf.getvalue()
    assert "broker redis://:***@h:6379/0 down" in out
    assert "ConnectionError" in out and PW not in out


@pytest.mark.parametrize("args", [["services.ops.enqueue", "--range", "0-1"],
                                  ["services.ops.cli", "status", "--range", "0-1"]],
                         ids=["enqueue-shards", "onsei-status"])
def test_cli_errors_do_not_print_broker_password(args, tmp_path):
    """A broker that is down: whatever the command says, the password is not in it."""
    env = {"ONSEI_BROKER_URL": f"redis://:{PW}@127.0.0.1:{free_port()}/0",
           "ONSEI_INPUT_URL": str(tmp_path / "raw"), "ONSEI_OUTPUT_URL": str(tmp_path / "out"),
           "ONSEI_SCRATCH_DIR": str(tmp_path / "s")}
    import os

    res = run_cli(args, {**os.environ, **env}, timeout=120)
    assert PW not in res.stdout + res.stderr, (res.stdout + res.stderr)[-2000:]


def test_json_dump_of_redacted_settings_has_no_secret(monkeypatch):
    _secret_env(monkeypatch)
    assert PW not in json.dumps(Settings().redacted(), default=str)
