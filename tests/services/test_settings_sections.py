"""Each stage's settings section (services/<stage>/settings.py): the same ONSEI_* names and YAML
keys as README.md's table reach the stage, checked up front, listed by `onsei config`."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from common.settings import Settings, describe_errors
from services.asr.settings import AsrSettings
from services.enhance.settings import EnhanceSettings
from services.stages import PIPELINE, PipelineSettings
from services.tokenize.settings import TokenizeSettings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for k in list(os.environ):
        if k.startswith("ONSEI_"):
            monkeypatch.delenv(k)
    return monkeypatch


def test_defaults_match_design(clean_env) -> None:
    s = PipelineSettings()
    assert s.languages == ["ja", "en"]
    assert s.asr_model == "large-v3-turbo"
    assert (s.asr_device, s.asr_compute_type) == ("auto", "auto")
    assert s.asr_batch_size == 16
    assert s.asr_chunk_seconds == 120
    assert s.enhancer == "sidon"
    assert s.sidon_model == "sarulab-speech/sidon-v0.1"
    assert s.enhance_chunk_seconds == 10
    assert s.tokenizer == "neucodec"
    assert s.neucodec_model == "neuphonic/neucodec"
    assert s.model_cache.endswith(".cache/onsei/models")


def test_each_spec_names_its_section_and_the_pipeline_joins_them() -> None:
    assert [spec.settings for spec in PIPELINE.specs] == [AsrSettings, EnhanceSettings,
                                                           TokenizeSettings]
    for section in (AsrSettings, EnhanceSettings, TokenizeSettings):
        assert issubclass(PipelineSettings, section)
    own = {c: set(c.model_fields) - set(Settings.model_fields)
           for c in (AsrSettings, EnhanceSettings, TokenizeSettings)}
    assert own[AsrSettings] & own[TokenizeSettings] == set()  # a name belongs to one section
    assert set(PipelineSettings.model_fields) == set(Settings.model_fields).union(*own.values())


@pytest.mark.parametrize("section, field, env, yaml, want_env, want_yaml", [
    (AsrSettings, "asr_batch_size", "32", "4", 32, 4),
    (AsrSettings, "languages", "ja, en ,zh", "en", ["ja", "en", "zh"], ["en"]),
    (EnhanceSettings, "enhance_chunk_seconds", "8", "6", 8.0, 6.0),
    (EnhanceSettings, "quality_fidelity_fraction", "0.5", "0.25", 0.5, 0.25),
    (TokenizeSettings, "tokenizer", "distill-neucodec", "distill-neucodec", "distill-neucodec",
     "distill-neucodec"),
    (TokenizeSettings, "filter_min_ovrl", "1.5", "2.5", 1.5, 2.5),
])
def test_env_and_yaml_reach_the_stage_setting(clean_env, tmp_path, section, field, env, yaml,
                                              want_env, want_yaml) -> None:
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text(f"{field}: {yaml}\nmax_range: 9\n")
    clean_env.setenv("ONSEI_CONFIG", str(cfg))
    for cls in (section, PipelineSettings):
        s = cls()
        assert getattr(s, field) == want_yaml and s.max_range == 9  # YAML over the default
    clean_env.setenv(f"ONSEI_{field.upper()}", env)
    for cls in (section, PipelineSettings):
        assert getattr(cls(), field) == want_env  # env over YAML


def test_a_stage_takes_its_section_from_generic_settings(clean_env, tmp_path) -> None:
    clean_env.setenv("ONSEI_ASR_BEAM_SIZE", "5")
    g = Settings(input_url=str(tmp_path), max_range=3)
    a = AsrSettings.of(g)
    assert (a.input_url, a.max_range, a.asr_beam_size) == (str(tmp_path), 3, 5)
    p = PipelineSettings(asr_beam_size=2)
    assert AsrSettings.of(p) is p and TokenizeSettings.of(p) is p


def test_each_stage_takes_its_specs_section_from_generic_settings(tmp_path) -> None:
    g = Settings(output_url=str(tmp_path))
    for spec in PIPELINE.specs:
        stage = spec.load_class()(g)
        assert isinstance(stage.settings, spec.settings), spec.name
        assert stage.settings.output_url == str(tmp_path)


def test_the_stage_reads_its_section(make_settings) -> None:
    from services.asr.stage import AsrStage
    from services.tokenize.stage import TokenizeStage

    s = make_settings(asr_batch_size=3, tokenizer="distill-neucodec")
    assert AsrStage(s).settings.asr_batch_size == 3
    assert TokenizeStage(s).settings.tokenizer == "distill-neucodec"
    g = Settings(output_url=s.output_url)
    assert PIPELINE.output_key("tokenize", g, 1).startswith("tokens/neucodec/")
    assert PIPELINE.output_key("tokenize", s, 1) == "tokens/distill-neucodec/shard-000001.jsonl"


def _errors(**kw) -> str:
    try:
        PipelineSettings(**kw)
    except ValidationError as e:
        return describe_errors(e)
    raise AssertionError(f"accepted: {kw}")


def test_language_names_are_refused_with_the_valid_codes() -> None:
    msg = _errors(languages="ja,japanese")
    assert msg.startswith("ONSEI_LANGUAGES: 'japanese' is not a Whisper language code")
    assert "did you mean ja?" in msg and ", yue" in msg and "\n" not in msg
    assert "ONSEI_LANGUAGES" in _errors(languages="")


def test_our_language_list_is_whispers() -> None:
    tokenizer = pytest.importorskip("faster_whisper.tokenizer")
    from services.asr.languages import WHISPER_LANGUAGES

    assert set(WHISPER_LANGUAGES) == set(tokenizer._LANGUAGE_CODES)


@pytest.mark.parametrize("field,value,want", [
    ("enhancer", "sidonn", ("ONSEI_ENHANCER: unknown enhancer 'sidonn': choose one of sidon, "
                           "rnnoise, none")),
    ("tokenizer", "encodec", "ONSEI_TOKENIZER: unknown tokenizer 'encodec'"),
])
def test_choices_checked(field: str, value: str, want: str) -> None:
    msg = _errors(**{field: value})
    assert msg.startswith(want), msg


def test_every_bad_setting_of_every_section_is_one_line() -> None:
    msg = _errors(languages="japanese", enhancer="x", tokenizer="y", broker_url="http://h/0")
    names = [line.split(":", 1)[0] for line in msg.splitlines()]
    assert sorted(names) == ["ONSEI_BROKER_URL", "ONSEI_ENHANCER", "ONSEI_LANGUAGES",
                             "ONSEI_TOKENIZER"]
