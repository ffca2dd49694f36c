"""Passwords the broker accepts but a simple pattern misreads (issue 25, item 3): an ``@``, a
space or ``://`` in the password, a space in the user. ``onsei config`` masks them all, a URL the
broker cannot parse is one line naming the setting (never the value), and an unexpected error
prints neither the value nor a traceback quoting it."""

from __future__ import annotations

import io
import json
import logging
import os
import uuid

import click
import pytest
from click.testing import CliRunner

from common.redact import (
    _on_celery_logging,
    install_log_redaction,
    redact_url,
    secret_literals,
)
from common.settings import Settings
from tests.conftest import free_port
from tests.harness import run_cli

A, B = "Aa" + uuid.uuid4().hex[:8], "Bb" + uuid.uuid4().hex[:8]

# (broker URL, the parts of it that must never be printed)
ODD = {
    "at-in-password": (f"redis://:{A}@{B}@127.0.0.1:6379/0", [A, B]),
    "space-in-password": (f"redis://:{A} {B}@127.0.0.1:6379/0", [A, B]),
    "space-in-user": (f"redis://us er:{A}{B}@127.0.0.1:6379/0", [A + B]),
    "lone-userinfo": (f"redis://{A}{B}@127.0.0.1:6379/0", [A + B]),
    "failover-list": (f"sentinel://:{A}@h1:26379;sentinel://:{B}@h2:26379", [A, B]),
}


@pytest.mark.parametrize("case", list(ODD))
@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_onsei_config_masks_odd_passwords(monkeypatch, case, as_json):
    from services.ops.cli import cli

    url, hidden = ODD[case]
    monkeypatch.setenv("ONSEI_BROKER_URL", url)
    res = CliRunner().invoke(cli, ["config", *(["--json"] if as_json else [])])
    assert res.exit_code == 0, res.output
    for part in hidden:
        assert part not in res.output, res.output
    assert "127.0.0.1" in res.output or "h2:26379" in res.output  # the rest stays useful


@pytest.mark.parametrize("url,masked", [
    ("redis://:p@ss@host:1/0", "redis://:***@host:1/0"),
    ("redis://:pa ss@host", "redis://:***@host"),
    ("redis://us er:pw@host", "redis://us er:***@host"),
    ("rediss://onsei:pw@h:6380/0", "rediss://onsei:***@h:6380/0"),
    ("redis://h:6379/0", "redis://h:6379/0"),
])
def test_redact_url_reads_the_password_as_the_broker_does(url, masked):
    from urllib.parse import urlsplit

    assert redact_url(url) == masked
    if "@" in url:  # the broker's own reading: the masked part is exactly its password
        assert urlsplit(url).password in secret_literals(url) or len(urlsplit(url).password) < 4


@pytest.mark.parametrize("password", [f"{A}://{B}", f"{A}?{B}", f"{A}#{B}", f"{A}/{B}"],
                         ids=["scheme-like", "query", "fragment", "slash"])
def test_unparsable_broker_url_is_one_line_without_the_value(password, tmp_path):
    """``redis://:a://b@host`` made `onsei status` print a traceback ending in the password's
    first characters (redis-py: "Port could not be cast to integer value as 'a:'")."""
    env = {**os.environ, "ONSEI_BROKER_URL": f"redis://:{password}@127.0.0.1:{free_port()}/0",
           "ONSEI_INPUT_URL": str(tmp_path / "raw"), "ONSEI_OUTPUT_URL": str(tmp_path / "out")}
    res = run_cli(["services.ops.cli", "status", "--range", "0-1"], env, timeout=120)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "Traceback" not in out, out[-2000:]
    assert A not in out and B not in out, out[-2000:]
    assert "ONSEI_BROKER_URL" in out and "percent-encode" in out, out[-2000:]


def test_settings_refuse_an_unparsable_broker_url_without_quoting_it():
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as ei:
        Settings(broker_url=f"redis://:{A}@127.0.0.1:{B}/0")  # a port that is no number
    assert A not in str(ei.value) and B not in str(ei.value)


@click.command("boom")
def boom() -> None:
    """A command with a bug: its error quotes what ``BOOM_MESSAGE`` holds."""
    raise RuntimeError(os.environ["BOOM_MESSAGE"])


@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_unexpected_error_masks_the_secret_settings(monkeypatch, verbose):
    """Any error a command did not foresee: one line (a traceback only with -v), and neither
    shows the secret settings, even where no URL pattern could find them (a space)."""
    from services.ops import cli as cli_mod

    url = f"redis://:{A} {B}@127.0.0.1:6379/0"
    monkeypatch.setenv("ONSEI_BROKER_URL", url)
    monkeypatch.setenv("ONSEI_FLOWER_BASIC_AUTH", f"admin:{B}flower")
    monkeypatch.setenv("BOOM_MESSAGE", f"cannot use {A} {B} nor {B}flower (from {url})")
    monkeypatch.setitem(cli_mod.SUBCOMMANDS, "boom", f"{__name__}:boom")
    res = CliRunner().invoke(cli_mod.cli, [*(["-v"] if verbose else []), "boom"])
    assert res.exit_code == 1
    assert A not in res.output and B not in res.output, res.output
    assert "Error: RuntimeError: cannot use *** nor ***" in res.output, res.output
    assert ("Traceback" in res.output) == verbose, res.output


def test_log_lines_mask_a_password_with_a_space():
    buf = io.StringIO()
    logger = logging.getLogger(f"onsei-test-{uuid.uuid4().hex}")
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(buf))
    install_log_redaction(logger, secret_literals(f"redis://:{A} {B}@h:6379/0"))
    logger.error("broker redis://:%s %s@h:6379/0 down", A, B)
    assert A not in buf.getvalue() and B not in buf.getvalue(), buf.getvalue()


def test_worker_logs_mask_the_apps_secret_settings():
    """A Celery worker's handlers get the masks of its app's settings (after_setup_logger)."""
    from services.stages import make_app

    app = make_app("probe", Settings(broker_url=f"redis://us er:{A} {B}@h:6379/0"))
    app.set_current()
    buf = io.StringIO()
    logger = logging.getLogger(f"onsei-test-{uuid.uuid4().hex}")
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(buf))
    _on_celery_logging(logger)
    logger.error("auth failed for %s", json.dumps({"password": f"{A} {B}"}))
    assert A not in buf.getvalue() and B not in buf.getvalue(), buf.getvalue()


@pytest.mark.parametrize("url", [f"redis://:{A}@{B}@h:6379/0", f"redis://:{A}://{B}@h/0",
                                 f"amqp://u:{A}@{B}@mq//"], ids=["at", "scheme-like", "amqp"])
def test_free_text_masks_up_to_the_last_at(url):
    """Error messages and log lines (no settings at hand): the password runs to the last ``@``
    of its word, as the broker reads it."""
    from common.redact import redact_text

    out = redact_text(f"cannot connect to {url}: refused")
    assert A not in out and B not in out and out.endswith(": refused"), out
