"""Settings: env + YAML + defaults, the names of README.md's table, redaction."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from common.settings import Settings


def test_defaults_match_design(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(__import__("os").environ):
        if k.startswith("ONSEI_"):
            monkeypatch.delenv(k)
    s = Settings()
    assert s.input_url == "./data/raw"
    assert s.output_url == "./data/out"
    assert s.shard_pattern == "shard-{id:06d}.tar"
    assert s.broker_url.get_secret_value() == "redis://127.0.0.1:6379/0"
    assert s.model_cache.endswith(".cache/onsei/models")


def test_no_stage_setting_is_generic() -> None:
    """A stage's settings live in its own section (services/<stage>/settings.py)."""
    stage_words = ("asr", "whisper", "lid", "language", "segment", "compression", "logprob",
                   "speech", "enhance", "sidon", "quality", "tokeniz", "neucodec", "filter")
    assert [f for f in Settings.model_fields if any(w in f for w in stage_words)] == []


def test_a_stage_setting_given_to_the_generic_settings_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="asr_model"):
        Settings(asr_model="bundled:whisper-base")  # never silently dropped


def test_a_yaml_file_with_every_section_is_read(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("asr_batch_size: 4\nmax_range: 7\n")
    monkeypatch.setenv("ONSEI_CONFIG", str(cfg))
    assert Settings().max_range == 7  # the stage's key is left to its section


def test_shard_names() -> None:
    s = Settings(shard_pattern="part-{id:05d}.tar")
    assert s.shard_name(12) == "part-00012.tar"
    assert s.shard_stem(12) == "part-00012"


def test_redacted_hides_passwords(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings(
        broker_url="rediss://user:s3cr3t@redis.example:6380/0",
        flower_basic_auth="admin:pa55word",
        output_url="s3://bucket/out",
    )
    out = s.redacted()
    text = json.dumps(out)
    assert "s3cr3t" not in text and "pa55word" not in text
    assert out["ONSEI_BROKER_URL"] == "rediss://user:***@redis.example:6380/0"
    assert out["ONSEI_OUTPUT_URL"] == "s3://bucket/out"


def test_onsei_config_command_redacts(monkeypatch: pytest.MonkeyPatch) -> None:
    env = dict(__import__("os").environ, ONSEI_BROKER_URL="redis://:hunter2@127.0.0.1:6379/0")
    out = subprocess.run([sys.executable, "-m", "services.ops.cli", "config", "--json"], env=env,
                         capture_output=True, text=True, check=True).stdout
    values = json.loads(out)
    assert values["ONSEI_BROKER_URL"] == "redis://:***@127.0.0.1:6379/0"
    assert "hunter2" not in out
    assert "ONSEI_LANGUAGES" in values


# --- checked at start, before any model loads -------------------------------------------------
def _errors(**kw) -> str:
    from pydantic import ValidationError

    from common.settings import describe_errors

    with pytest.raises(ValidationError) as e:
        Settings(**kw)
    return describe_errors(e.value)


def test_broker_scheme_checked() -> None:
    msg = _errors(broker_url="http://u:pw@h:6379/0")
    assert msg.startswith("ONSEI_BROKER_URL: the broker URL must start with"), msg
    assert "pw@" not in msg


def test_http_broker_error_never_shows_the_password() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as e:
        Settings(broker_url="http://user:hunter2@h/0")
    assert "hunter2" not in str(e.value)


def test_missing_config_file_is_an_error(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from common.settings import ConfigError

    monkeypatch.setenv("ONSEI_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="nope.yaml: no such file"):
        Settings()


def test_cli_says_one_line_per_bad_setting(tmp_path) -> None:
    env = dict(__import__("os").environ, ONSEI_LANGUAGES="japanese", ONSEI_ENHANCER="x",
               ONSEI_BROKER_URL="redis://127.0.0.1:1/0")
    r = subprocess.run([sys.executable, "-m", "services.ops.cli", "run", "--range", "0",
                        "--input", str(tmp_path), "--output", str(tmp_path / "out")], env=env,
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert lines[0].startswith("Error: ONSEI_LANGUAGES: 'japanese' is not a Whisper language")
    assert any(x.startswith("ONSEI_ENHANCER: unknown enhancer") for x in lines), lines
    assert not (tmp_path / "out").exists()  # nothing started
    env = dict(__import__("os").environ, ONSEI_CONFIG=str(tmp_path / "missing.yaml"))
    r = subprocess.run([sys.executable, "-m", "services.ops.cli", "config"], env=env,
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "missing.yaml: no such file" in r.stderr


def test_a_section_is_made_once_per_settings_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec asks for its section per shard: made once, remade when a value changes."""

    class Section(Settings):
        extra_knob: int = 1

    monkeypatch.setenv("ONSEI_EXTRA_KNOB", "5")
    g = Settings(max_range=3)
    first = Section.of(g)
    assert (first.max_range, first.extra_knob) == (3, 5)
    assert Section.of(g) is first
    assert Section.of(first) is first
    copied = g.model_copy(update={"max_range": 4})
    assert Section.of(copied).max_range == 4 and Section.of(g) is first
    g.max_range = 6
    assert Section.of(g).max_range == 6
