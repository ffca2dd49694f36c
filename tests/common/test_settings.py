"""Settings: env + YAML + defaults, the names of README.md's table, redaction."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from common.settings import Settings


def test_defaults_match_design(clean_env: pytest.MonkeyPatch) -> None:
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
    assert "ONSEI_ASR_LANGUAGES" in values
    assert values["ONSEI_DEDUP_MEMORY_LIMIT_MB"] == 4096  # onsei dedup's section too


def test_onsei_config_refuses_a_bad_dedup_setting() -> None:
    env = dict(__import__("os").environ, ONSEI_DEDUP_MAX_BER="0.9")
    res = subprocess.run([sys.executable, "-m", "services.ops.cli", "config"], env=env,
                         capture_output=True, text=True, check=False)
    assert res.returncode != 0 and "ONSEI_DEDUP_MAX_BER" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


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
    from common.errors import ConfigError

    monkeypatch.setenv("ONSEI_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="nope.yaml: no such file"):
        Settings()


def test_cli_says_one_line_per_bad_setting(tmp_path) -> None:
    env = dict(__import__("os").environ, ONSEI_ASR_LANGUAGES="japanese", ONSEI_ENHANCE_BACKEND="x",
               ONSEI_BROKER_URL="redis://127.0.0.1:1/0")
    r = subprocess.run([sys.executable, "-m", "services.ops.cli", "run", "--range", "0",
                        "--input", str(tmp_path), "--output", str(tmp_path / "out")], env=env,
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert lines[0].startswith("Error: ONSEI_ASR_LANGUAGES: 'japanese' is not a Whisper language")
    assert any(x.startswith("ONSEI_ENHANCE_BACKEND: unknown enhancer") for x in lines), lines
    assert not (tmp_path / "out").exists()  # nothing started
    env = dict(__import__("os").environ, ONSEI_CONFIG=str(tmp_path / "missing.yaml"))
    r = subprocess.run([sys.executable, "-m", "services.ops.cli", "config"], env=env,
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "missing.yaml: no such file" in r.stderr


def test_a_section_is_a_view_of_the_settings_given_or_refused(monkeypatch) -> None:
    """A stage's section is never built from the environment behind the entry point's back,
    and holds its own fields only: another section's are not there to read."""
    from common.settings import section

    class Section(Settings):
        extra_knob: int = 1

    class Other(Settings):
        other_knob: int = 2

    class Whole(Section, Other):
        pass

    whole = Whole(max_range=3, extra_knob=5)
    monkeypatch.setenv("ONSEI_EXTRA_KNOB", "9")  # read by the entry point only
    view = section(whole, Section)
    assert type(view) is Section and (view.max_range, view.extra_knob) == (3, 5)
    assert not hasattr(view, "other_knob") and section(whole, Other).other_knob == 2
    assert view.model_fields_set == {"max_range", "extra_knob"}
    assert section(view, Section) is view
    with pytest.raises(TypeError, match="Section needed, got Settings: build the pipeline's"):
        section(Settings(), Section)


def test_nothing_falls_back_to_settings_of_its_own() -> None:
    """Settings are handed down from the entry point; no module builds or caches a set."""
    from celery import Celery

    import common.settings
    from common.queue.config import app_settings, make_app
    from common.storage import open_store

    assert not hasattr(common.settings, "get_settings")
    with pytest.raises(TypeError, match="an s3 store needs the settings"):
        open_store("s3://bucket/prefix")
    with pytest.raises(TypeError, match="not made by make_app"):
        app_settings(Celery("bare"))
    s = Settings(broker_url="redis://127.0.0.1:1/0")
    assert app_settings(make_app("probe", s)) is s


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "-1e999"])
def test_no_float_setting_takes_nan_or_infinity(value: str) -> None:
    floats = [n for n, f in Settings.model_fields.items() if f.annotation in (float, float | None)]
    assert "s3_read_timeout" in floats and len(floats) >= 7
    msg = _errors(**dict.fromkeys(floats, value))
    assert sorted(line.split(":", 1)[0] for line in msg.splitlines()) == sorted(
        f"ONSEI_{n.upper()}" for n in floats), msg
    assert all(line.endswith("finite number") for line in msg.splitlines()), msg


@pytest.mark.parametrize("pattern, want", [
    ("shard.tar", "gives every shard id the same name: it needs {id}"),
    ("shard-{n}.tar", "is not a format with {id}"),
    ("shard-{id:06q}.tar", "is not a format with {id}"),
    ("shard-{id.real}{", "is not a format with {id}"),
])
def test_a_shard_pattern_names_each_id_apart(pattern: str, want: str) -> None:
    msg = _errors(shard_pattern=pattern)
    assert msg.startswith("ONSEI_SHARD_PATTERN: ") and want in msg and "\n" not in msg, msg
    assert Settings(shard_pattern="x/{id}.tar").shard_name(7) == "x/7.tar"


def test_ranges_between_two_settings_are_ordered() -> None:
    assert _errors(min_member_seconds=5, max_member_seconds=2) == (
        "ONSEI_MIN_MEMBER_SECONDS (5) must be below ONSEI_MAX_MEMBER_SECONDS (2)")


def test_two_sections_declaring_one_setting_are_refused() -> None:
    from common.stages.spec import collisions

    class Shared(Settings):
        shared_knob: int = 1

    class A(Shared):
        a_knob: int = 1

    class B(Shared):
        b_knob: int = 1

    class Clash(Settings):
        a_knob: float = 0.5

    collisions((A, B))  # a field from a common base is one declaration
    with pytest.raises(ValueError, match="ONSEI_A_KNOB is declared by both .*A and .*Clash"):
        collisions((A, B, Clash))
