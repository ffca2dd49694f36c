"""What a run's records hold is text on the screen: a failure reason or a sick node's reason
quoting rich markup (``[/x]``, ``[link=...]``), an ESC sequence or a newline is shown as it
is, escaped, and ``onsei status`` still exits 0."""

from __future__ import annotations

from click.testing import CliRunner

from common.ledger.store import Ledger
from common.storage import open_store
from services.ops.cli import cli
from services.stages import PIPELINE

REASONS = {
    0: "ValueError: bad member mix[/x].wav",
    1: "OSError: [link=http://evil.example]click me[/link] and [bold]loud[/bold]",
    2: "RuntimeError: \x1b[2J\x1b]8;;http://evil.example\x07cleared\nenhance shard 9 (attempt 1): "
       "forged line",
    3: "KeyError: '<b>html</b>' \u202eevil",
}


def test_failure_reasons_are_shown_not_obeyed(make_settings, monkeypatch) -> None:
    s = make_settings(broker_url="redis://127.0.0.1:1/0")
    led = Ledger(open_store(s.output_url, s), s, PIPELINE)
    for i, reason in REASONS.items():
        led.mark_failed("asr", i, reason, "tb", attempts=1)
    monkeypatch.setenv("ONSEI_BROKER_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("COLUMNS", "400")  # one line per failure: the text is compared whole
    res = CliRunner().invoke(cli, ["status", "--output", s.output_url])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, repr(out)
    assert "mix[/x].wav" in out
    assert "[link=http://evil.example]click me[/link] and [bold]loud[/bold]" in out
    assert ("\\x1b[2J\\x1b]8;;http://evil.example\\x07cleared\\nenhance shard 9 (attempt 1): "
            "forged line") in out
    assert "'<b>html</b>' \\u202eevil" in out
    # the newline forged no line of its own
    assert not any(line.startswith("enhance shard 9") for line in out.splitlines()), out
