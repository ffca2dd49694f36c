"""A misspelt setting stops every entry point at boot, naming the closest real one; names other
tools read, and former names, still pass; a malformed config file is one sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from common.errors import ConfigError
from common.setting_names import check_names, known_names, read_config
from services.ops.cli import cli
from tests.conftest import REPO


def _onsei(env: dict[str, str], *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args or ["config"]), env=env)
    return res.exit_code, res.output


def test_a_misspelt_environment_name_stops_a_command(clean_env: pytest.MonkeyPatch) -> None:
    code, out = _onsei({"ONSEI_OUTPUT_URLL": "/x"})
    assert code == 1 and "Traceback" not in out
    assert "ONSEI_OUTPUT_URLL is not a setting (did you mean ONSEI_OUTPUT_URL?)" in out
    # lower case is read by the settings all the same, so it is judged too
    code, out = _onsei({"onsei_filter_min_ovlr": "3.5"})
    assert code == 1 and "did you mean ONSEI_FILTER_MIN_OVRL?" in out
    code, out = _onsei({"ONSEI_OUTPUT_URLL": "/x"}, "config", "--help")  # help still helps
    assert code == 0 and "Usage: " in out


def test_a_misspelt_yaml_key_stops_a_command(clean_env: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("filter_min_ovlr: 3.5\noutput_url: /tmp/x\n")
    code, out = _onsei({"ONSEI_CONFIG": str(cfg)})
    assert code == 1 and "filter_min_ovlr is not a setting (did you mean filter_min_ovrl?)" in out
    cfg.write_text("filter_min_ovrl: 3.5\ndedup_threshold_typo: 1\n")
    code, out = _onsei({"ONSEI_CONFIG": str(cfg)})
    assert code == 1 and "dedup_threshold_typo is not a setting" in out
    cfg.write_text("filter_min_ovrl: 3.5\n")
    code, out = _onsei({"ONSEI_CONFIG": str(cfg)})
    assert code == 0 and "ONSEI_FILTER_MIN_OVRL" in out and "3.5" in out


def test_names_that_are_not_settings_and_former_names_pass(clean_env: pytest.MonkeyPatch
                                                           ) -> None:
    env = {"ONSEI_TEST_REDIS_URL": "redis://x", "ONSEI_DATA_DIR": "/d", "ONSEI_ASR_GPU": "0",
           "ONSEI_TOKENIZE_METRICS_HOST_PORT": "9", "ONSEI_IMAGE_TAG": "v1",
           "ONSEI_BENCH_VERBOSE": "1", "ONSEI_SEGMENT_MAX_SECONDS": "20",  # a former name
           "ONSEI_DEDUP_THREADS": "2", "ONSEI_SPEAKERS_THREADS": "2"}  # the corpus steps'
    with pytest.warns(FutureWarning, match="ONSEI_SEGMENT_MAX_SECONDS is a former name"):
        code, out = _onsei(env)
    assert code == 0, out
    # a stage-like deploy name of a stage that does not exist is refused
    code, out = _onsei({"ONSEI_DENOISE_GPU": "0"})
    assert code == 1 and "ONSEI_DENOISE_GPU is not a setting" in out


def test_enqueue_shards_checks_the_names_too(clean_env: pytest.MonkeyPatch) -> None:
    from services.ops.enqueue import main

    res = CliRunner().invoke(main, ["--range", "0-3", "--dry-run"],
                             env={"ONSEI_MAX_RANGEE": "5"})
    assert res.exit_code == 1 and "did you mean ONSEI_MAX_RANGE?" in res.output


def test_a_worker_refuses_a_misspelt_name_at_boot(clean_env: pytest.MonkeyPatch) -> None:
    """A worker knows its own sections and those before it: it refuses names under their
    prefixes and near-misses of names it knows, and leaves a later stage's names alone."""
    from services.pipeline import PIPELINE

    base = {k: v for k, v in os.environ.items() if not k.startswith("ONSEI_")}
    code = "import services.asr.tasks; print('booted')"
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO,
                       env={**base, "ONSEI_ASR_LANGUAGESS": "en"},
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "ONSEI_ASR_LANGUAGESS is not a setting (did you mean ONSEI_ASR_LANGUAGES?)" in r.stderr
    later = {"ONSEI_TOKENIZE_CODEC": "neucodec", "ONSEI_FILTER_MIN_OVRL": "2",
             "ONSEI_DEDUP_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**base, **later},
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0 and "booted" in r.stdout, r.stderr
    # what that boot checks (services/pipeline.py): a near-miss of a name it knows is refused
    with pytest.raises(ConfigError, match="did you mean ONSEI_OUTPUT_URL?"):
        check_names((PIPELINE.settings_upto("asr"),), PIPELINE.names, every_section=False,
                    environ={"ONSEI_OUTPUT_URLL": "/x", **later})


def test_no_real_setting_is_refused_by_an_earlier_stages_worker() -> None:
    """The near-miss rule of a partial check never catches a real setting of a later section."""
    from services.pipeline import PIPELINE
    from services.setting_names import every_settings_class

    every = {f"ONSEI_{n.upper()}": "1" for n in known_names(every_settings_class())}
    for stage in PIPELINE.names:
        check_names((PIPELINE.settings_upto(stage),), PIPELINE.names, every_section=False,
                    environ=every)


@pytest.mark.parametrize("text, want", [
    ("- a\n- b\n", "holds a list, not a mapping of setting names"),
    ("just words\n", "holds a str, not a mapping"),
    ("k: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 32 deep"),
    ("k: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "nested more than 32 deep"),
    ("".join(" " * i + "k:\n" for i in range(100)), "nested more than 32 deep"),
    ("".join(" " * i + "k:\n" for i in range(5000)), "is too large for a settings file"),
    ("a: [1\nb: 2\n", "not valid YAML at line 2"),
    ("1: x\n", "the key 1 is not a setting name"),
    ("\xff\xfe", "cannot be read"),
])
def test_a_malformed_config_file_is_one_sentence(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                                 text: str, want: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    with pytest.raises(ConfigError, match=want):
        read_config(cfg)
    code, out = _onsei({"ONSEI_CONFIG": str(cfg)})
    assert code == 1 and want in out and "Traceback" not in out, out
    assert len([x for x in out.splitlines() if x.strip()]) == 1
    # the settings themselves read the file the same way (a library caller, no command)
    clean_env.setenv("ONSEI_CONFIG", str(cfg))
    from common.settings import Settings

    with pytest.raises(ConfigError, match=want):
        Settings()


def test_an_empty_config_file_is_no_settings(tmp_path: Path) -> None:
    cfg = tmp_path / "empty.yaml"
    cfg.write_text("# nothing yet\n")
    assert read_config(cfg) == {}
