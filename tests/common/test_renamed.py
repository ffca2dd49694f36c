"""Settings renamed to carry their section's prefix: read under the former names, with a
warning naming the new one; both names at once refused; every section's fields prefixed."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import Field, ValidationError

from common.errors import ConfigError
from common.renamed import RenamedSetting, renames_of
from common.settings import Settings, describe_errors
from common.stages.spec import unprefixed
from services.asr.settings import AsrSettings
from services.dedup.settings import DedupSettings
from services.enhance.settings import EnhanceSettings
from services.speakers.settings import SpeakersSettings
from services.stages import PipelineSettings
from services.tokenize.settings import TokenizeSettings
from services.whisper.settings import WhisperSettings


@pytest.fixture
def env(clean_env: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return clean_env


def test_a_former_variable_sets_the_new_field_and_warns(env) -> None:
    env.setenv("ONSEI_LANGUAGES", "en")
    env.setenv("ONSEI_ENHANCER", "rnnoise")
    env.setenv("ONSEI_SEGMENT_MAX_SECONDS", "20")
    with pytest.warns(RenamedSetting) as got:
        s = PipelineSettings()
    assert s.asr_languages == ["en"] and s.enhance_backend == "rnnoise"
    assert s.asr_segment_max_seconds == 20.0
    text = " ".join(str(w.message) for w in got)
    assert "ONSEI_ASR_LANGUAGES" in text and "ONSEI_ENHANCE_BACKEND" in text
    assert "ONSEI_ASR_SEGMENT_MAX_SECONDS" in text


def test_a_former_yaml_key_sets_the_new_field(env, tmp_path: Path) -> None:
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("tokenizer: distill-neucodec\nsidon_model: /models/sidon\n"
                   "asr_batch_size: 4\n")
    env.setenv("ONSEI_CONFIG", str(cfg))
    with pytest.warns(RenamedSetting) as got:
        s = PipelineSettings()
    assert any("YAML key tokenizer" in str(w.message) for w in got)
    assert (s.tokenize_codec, s.enhance_sidon_model, s.asr_batch_size) == (
        "distill-neucodec", "/models/sidon", 4)


def test_a_former_keyword_sets_the_new_field(env) -> None:
    with pytest.warns(RenamedSetting, match="ONSEI_TOKENIZE_NEUCODEC_MODEL"):
        s = TokenizeSettings(neucodec_model="/models/neucodec")
    assert s.tokenize_neucodec_model == "/models/neucodec"


def test_the_environment_still_wins_over_the_yaml_file_across_names(env, tmp_path) -> None:
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("asr_languages: [ja]\n")
    env.setenv("ONSEI_CONFIG", str(cfg))
    env.setenv("ONSEI_LANGUAGES", "en")
    with pytest.warns(RenamedSetting):
        assert PipelineSettings().asr_languages == ["en"]


def test_both_names_at_once_are_refused(env, tmp_path: Path) -> None:
    env.setenv("ONSEI_ENHANCER", "none")
    env.setenv("ONSEI_ENHANCE_BACKEND", "rnnoise")
    with pytest.raises(ConfigError, match="ONSEI_ENHANCER and ONSEI_ENHANCE_BACKEND"):
        PipelineSettings()
    env.delenv("ONSEI_ENHANCER")
    env.delenv("ONSEI_ENHANCE_BACKEND")
    with pytest.raises(ConfigError, match="keep only asr_languages"):
        PipelineSettings(languages=["en"], asr_languages=["ja"])
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("lid_windows: 2\nasr_lid_windows: 3\n")
    env.setenv("ONSEI_CONFIG", str(cfg))
    with pytest.raises(ConfigError, match="lid_windows and asr_lid_windows"):
        PipelineSettings()


def test_a_bad_value_under_a_former_name_is_reported_under_the_new_one(env) -> None:
    env.setenv("ONSEI_TOKENIZER", "encodec")
    with pytest.warns(RenamedSetting), pytest.raises(ValidationError) as e:
        PipelineSettings()
    assert describe_errors(e.value).startswith("ONSEI_TOKENIZE_CODEC: unknown tokenizer")


def test_an_unknown_name_is_still_refused(env) -> None:
    with pytest.raises(ValidationError, match="extra"):
        PipelineSettings(language=["en"])


@pytest.mark.parametrize("section", [WhisperSettings, AsrSettings, EnhanceSettings,
                                     TokenizeSettings, DedupSettings, SpeakersSettings])
def test_every_section_field_carries_its_prefix(section: type[Settings]) -> None:
    unprefixed(section)
    own = set(section.model_fields) - set(Settings.model_fields)
    prefixes = tuple(p for c in section.__mro__ for p in c.__dict__.get("prefixes", ()))
    assert own and all(n.startswith(prefixes) for n in own)
    for old, new in renames_of(section).items():
        assert new in section.model_fields and old not in section.model_fields


def test_a_field_without_its_prefix_is_refused() -> None:
    class Loose(Settings):
        prefixes: ClassVar[tuple[str, ...]] = ("toy_",)
        toy_rate: int = Field(1)
        rate: int = Field(2)

    with pytest.raises(ValueError, match="setting rate of .*Loose does not start with .*toy_"):
        unprefixed(Loose)
