"""Profiles: one word selects a coherent set of models; every single setting still overrides
it; ``auto`` follows the node's GPU; ``onsei config`` says what set each value."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from common.errors import ConfigError
from common.profiles import CAMPLUS, PROFILES, SEGMENTATION_3


@pytest.fixture
def no_gpu(clean_env, monkeypatch):
    from common import profiles

    monkeypatch.setattr(profiles, "has_gpu", lambda: False)
    return clean_env


def _settings(**kw):
    from services.stages import PipelineSettings

    return PipelineSettings(**kw)


def test_auto_is_standard_without_a_gpu_and_gpu_with_one(no_gpu, monkeypatch):
    from common import profiles

    s = _settings()
    assert (s.profile, s.quality_overlap_model, s.quality_speaker_label_model) == ("auto", "", "")
    monkeypatch.setattr(profiles, "has_gpu", lambda: True)
    s = _settings()
    assert s.quality_overlap_model == SEGMENTATION_3
    assert s.quality_speaker_label_model == CAMPLUS
    assert s.asr_model == "large-v3-turbo" and s.enhance_backend == "sidon"


def test_precedence_keyword_env_yaml_profile_default(no_gpu, tmp_path):
    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("profile: offline\nasr_batch_size: 4\nenhance_backend: none\n")
    no_gpu.setenv("ONSEI_CONFIG", str(cfg))
    s = _settings()
    # the profile fills what nobody set; the YAML file beats it
    assert s.asr_model == "bundled:whisper-base" and s.enhance_backend == "none"
    no_gpu.setenv("ONSEI_ASR_MODEL", "small")
    no_gpu.setenv("ONSEI_PROFILE", "gpu")  # the environment beats the YAML key
    s = _settings()
    assert s.asr_model == "small" and s.quality_overlap_model == SEGMENTATION_3
    assert _settings(profile="offline", enhance_backend="sidon").enhance_backend == "sidon"


def test_unknown_profile_is_one_clear_error(no_gpu):
    no_gpu.setenv("ONSEI_PROFILE", "gpus")
    with pytest.raises(ConfigError, match="unknown profile 'gpus'.*offline, standard, gpu"):
        _settings()


def test_every_profile_value_is_a_real_setting_and_every_model_has_a_licence(no_gpu):
    from services.stages import PipelineSettings

    for profile in PROFILES.values():
        assert set(profile.values) <= set(PipelineSettings.model_fields), profile.name
        _settings(profile=profile.name)  # each validates
        assert all(m.licence and m.setting in PipelineSettings.model_fields
                   for m in profile.models), profile.name


def test_onsei_config_says_what_set_each_value(no_gpu, tmp_path):
    from services.ops.cli import cli

    cfg = tmp_path / "onsei.yaml"
    cfg.write_text("asr_batch_size: 4\n")
    env = {"ONSEI_PROFILE": "gpu", "ONSEI_ASR_MODEL": "small", "ONSEI_CONFIG": str(cfg)}
    res = CliRunner().invoke(cli, ["config", "--json", "--origins"], env=env)
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)
    assert shown["ONSEI_ASR_MODEL"] == {"value": "small", "set_by": "env"}
    assert shown["ONSEI_ASR_BATCH_SIZE"]["set_by"] == "ONSEI_CONFIG"
    assert shown["ONSEI_QUALITY_OVERLAP_MODEL"] == {"value": SEGMENTATION_3,
                                                    "set_by": "profile gpu"}
    assert shown["ONSEI_ENHANCE_CHUNK_SECONDS"]["set_by"] == "default"
    res = CliRunner().invoke(cli, ["config"], env=env)
    assert res.exit_code == 0 and res.output.startswith("profile: gpu")
    assert "[profile gpu]" in res.output


def test_models_fetch_lists_the_profiles_annotation_models(no_gpu):
    from services.ops.models import configured_models

    gpu = {m.name for m in configured_models(_settings(profile="gpu"))}
    assert {SEGMENTATION_3, CAMPLUS, "sarulab-speech/sidon-v0.1"} <= gpu
    offline = {m.name for m in configured_models(_settings(profile="offline"))}
    assert not offline & {SEGMENTATION_3, CAMPLUS, "sarulab-speech/sidon-v0.1"}
