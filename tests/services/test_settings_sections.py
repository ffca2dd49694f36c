"""Each stage's settings section (services/<stage>/settings.py): the same ONSEI_* names and YAML
keys as README.md's table reach the stage, checked up front, listed by `onsei config`."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from common.settings import Settings, describe_errors
from services.asr.settings import AsrSettings
from services.enhance.settings import EnhanceSettings
from services.stages import PIPELINE, PipelineSettings
from services.tokenize.settings import TokenizeSettings


def test_defaults_match_design(clean_env) -> None:
    s = PipelineSettings()
    assert s.asr_languages == ["ja", "en"]
    assert s.asr_model == "large-v3-turbo"
    assert (s.asr_device, s.asr_compute_type) == ("auto", "auto")
    assert s.asr_batch_size == 16
    assert s.asr_chunk_seconds == 120
    assert s.enhance_backend == "sidon"
    assert s.enhance_sidon_model == "sarulab-speech/sidon-v0.1"
    assert s.enhance_chunk_seconds == 10
    assert s.tokenize_codec == "neucodec"
    assert s.tokenize_neucodec_model == "neuphonic/neucodec"
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
    (AsrSettings, "asr_languages", "ja, en ,zh", "en", ["ja", "en", "zh"], ["en"]),
    (EnhanceSettings, "enhance_chunk_seconds", "8", "6", 8.0, 6.0),
    (EnhanceSettings, "quality_fidelity_fraction", "0.5", "0.25", 0.5, 0.25),
    (TokenizeSettings, "tokenize_codec", "distill-neucodec", "distill-neucodec", "distill-neucodec",
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


def test_a_stage_gets_its_section_only_from_the_settings_given(clean_env, tmp_path) -> None:
    """The entry point built the pipeline's settings; a stage never builds its section from the
    environment (that would bypass what the entry point was given and checked)."""
    from common.stages.engine import Engine

    clean_env.setenv("ONSEI_ASR_BEAM_SIZE", "5")
    p = PipelineSettings(asr_beam_size=2, output_url=str(tmp_path))
    for spec in PIPELINE.specs:
        for view in (spec.section(p), Engine(p, PIPELINE, spec.name).stage.settings):
            # a view of the section's own fields, the values given (beam size 2, not the env's 5)
            assert type(view) is spec.settings
            assert all(getattr(view, k) == getattr(p, k) for k in spec.settings.model_fields)
        assert (spec.name != "asr") or spec.section(p).asr_beam_size == 2
    g = Settings(output_url=str(tmp_path))
    for spec in PIPELINE.specs:
        with pytest.raises(TypeError, match=f"{spec.settings.__name__} needed, got Settings"):
            _ = Engine(g, PIPELINE, spec.name).stage
        with pytest.raises(TypeError, match=f"{spec.settings.__name__} needed"):
            PIPELINE.output_key(spec.name, g, 1)


def test_no_stage_builds_its_own_section() -> None:
    """One way to a stage's section (StageSpec.section), not a line copied into each stage."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = [str(p.relative_to(root)) for d in ("common", "services")
                 for p in (root / d).rglob("*.py") if "Settings.of(" in p.read_text()]
    assert offenders == []
    assert not hasattr(Settings, "of")


def test_the_stage_reads_its_section(make_settings) -> None:
    from services.asr.stage import AsrStage
    from services.tokenize.stage import TokenizeStage

    s = make_settings(asr_batch_size=3, tokenize_codec="distill-neucodec")
    assert AsrStage(s).settings.asr_batch_size == 3
    assert TokenizeStage(s).settings.tokenize_codec == "distill-neucodec"
    assert PIPELINE.output_key("tokenize", make_settings(), 1).startswith("tokens/neucodec/")
    assert PIPELINE.output_key("tokenize", s, 1) == "tokens/distill-neucodec/shard-000001.jsonl"


def test_every_numeric_setting_has_bounds() -> None:
    """A number without bounds is a value that breaks a run later (0 s chunks, a 1e-9 s hop)."""
    import annotated_types as at

    unbounded = []
    for name, f in PipelineSettings.model_fields.items():
        if f.annotation not in (int, float, int | None, float | None):
            continue
        low = any(isinstance(m, (at.Ge, at.Gt)) for m in f.metadata)
        high = any(isinstance(m, (at.Le, at.Lt)) for m in f.metadata)
        if not (low and high):
            unbounded.append(name)
    assert unbounded == []


@pytest.mark.parametrize("value", ["nan", "inf", "1e999"])
def test_no_section_float_takes_nan_or_infinity(clean_env, value: str) -> None:
    own = [n for n, f in PipelineSettings.model_fields.items()
           if f.annotation in (float, float | None) and n not in Settings.model_fields]
    assert {"filter_min_ovrl", "quality_fidelity_cer", "enhance_chunk_seconds"} <= set(own)
    for n in own:
        clean_env.setenv(f"ONSEI_{n.upper()}", value)
    msg = _errors()
    assert sorted(line.split(":", 1)[0] for line in msg.splitlines()) == sorted(
        f"ONSEI_{n.upper()}" for n in own), msg


@pytest.mark.parametrize("field, value, want", [
    ("tokenize_batching", "fast",
     "ONSEI_TOKENIZE_BATCHING: unknown batching 'fast': choose one of auto, exact, stitched, "),
    ("until", "bogus", "ONSEI_UNTIL: unknown stage 'bogus': choose one of asr, enhance, tokenize"),
    ("enhance_frontend", "jax", "ONSEI_ENHANCE_FRONTEND: unknown Sidon frontend 'jax'"),
    ("quality_dnsmos_hop_seconds", 0.01,
     "ONSEI_QUALITY_DNSMOS_HOP_SECONDS: 0.01 s is below the finest hop, 0.1 s"),
    ("asr_segment_min_seconds", 40,
     "ONSEI_ASR_SEGMENT_MIN_SECONDS (40) must be below ONSEI_ASR_SEGMENT_MAX_SECONDS (30)"),
])
def test_section_values_checked_up_front(field: str, value, want: str) -> None:
    msg = _errors(**{field: value})
    assert msg.startswith(want) and "\n" not in msg, msg


def test_the_tokenize_policies_are_the_settings_choices() -> None:
    from services.tokenize import encode, settings

    assert encode.POLICIES is settings.POLICIES


def _errors(**kw) -> str:
    try:
        PipelineSettings(**kw)
    except ValidationError as e:
        return describe_errors(e)
    raise AssertionError(f"accepted: {kw}")


def test_language_names_are_refused_with_the_valid_codes() -> None:
    msg = _errors(asr_languages="ja,japanese")
    assert msg.startswith("ONSEI_ASR_LANGUAGES: 'japanese' is not a Whisper language code")
    assert "did you mean ja?" in msg and ", yue" in msg and "\n" not in msg
    assert "ONSEI_ASR_LANGUAGES" in _errors(asr_languages="")


def test_our_language_list_is_whispers() -> None:
    tokenizer = pytest.importorskip("faster_whisper.tokenizer")
    from services.asr.languages import WHISPER_LANGUAGES

    assert set(WHISPER_LANGUAGES) == set(tokenizer._LANGUAGE_CODES)


@pytest.mark.parametrize("field,value,want", [
    ("enhance_backend", "sidonn", ("ONSEI_ENHANCE_BACKEND: unknown enhancer 'sidonn': choose one "
                                  "of sidon, rnnoise, none")),
    ("tokenize_codec", "encodec", "ONSEI_TOKENIZE_CODEC: unknown tokenizer 'encodec'"),
])
def test_choices_checked(field: str, value: str, want: str) -> None:
    msg = _errors(**{field: value})
    assert msg.startswith(want), msg


def test_every_bad_setting_of_every_section_is_one_line() -> None:
    msg = _errors(asr_languages="japanese", enhance_backend="x", tokenize_codec="y",
                  broker_url="http://h/0")
    names = [line.split(":", 1)[0] for line in msg.splitlines()]
    assert sorted(names) == ["ONSEI_ASR_LANGUAGES", "ONSEI_BROKER_URL", "ONSEI_ENHANCE_BACKEND",
                             "ONSEI_TOKENIZE_CODEC"]


def test_no_library_module_reads_a_setting_from_the_environment() -> None:
    """Entry points (services/ops: the commands) build the settings; below them, only other
    libraries' own variables are read, each named here with its reason."""
    import re
    from pathlib import Path

    allowed = {
        "common/settings.py": {"ONSEI_CONFIG"},  # the settings' own source, read as they are built
        # the profile is a source of the settings too, below the YAML file: read as they are built
        "common/profiles.py": {"ONSEI_PROFILE"},
        # every ONSEI_* name is judged at boot ("?": the whole environment), so a misspelt
        # setting is an error instead of a default
        "common/setting_names.py": {"?", "ONSEI_CONFIG"},
        # which stages exist decides which settings sections exist: read before the settings
        "services/pipeline.py": {"ONSEI_PIPELINE"},
        "common/queue/metrics.py": {"PROMETHEUS_MULTIPROC_DIR"},  # prometheus_client's switch
        "common/models/hub.py": {"HF_HUB_OFFLINE", "HF_ENDPOINT"},  # huggingface_hub's
        "common/storage/s3_probe.py": {"AWS_ENDPOINT_URL"},  # botocore's
        # pyannote.audio's telemetry switch, read when it is imported
        "services/enhance/quality/overlap_model.py": {"PYANNOTE_METRICS_ENABLED"},
        # OpenMP's, OpenBLAS's and MKL's pool sizes, set for libraries a worker loads later
        "common/node/threads.py": {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"},
        # glibc's own malloc settings: those the operator gave it are kept
        "common/node/allocator.py": {"MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_",
                                     "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX",
                                     "GLIBC_TUNABLES"},
    }
    root = Path(__file__).resolve().parents[2]
    found: dict[str, set[str]] = {}
    for d in ("common", "services"):
        for p in (root / d).rglob("*.py"):
            rel = str(p.relative_to(root))
            if rel.startswith("services/ops/"):
                continue
            for line in p.read_text().splitlines():
                if re.search(r"os\.environ|os\.getenv|environ\.get", line):
                    found.setdefault(rel, set()).update(
                        re.findall(r"[\"']([A-Z][A-Z0-9_]+)[\"']", line) or {"?"})
    assert found == allowed


def test_a_worker_boot_stops_with_one_line_per_bad_value(clean_env, tmp_path) -> None:
    """What ``services/<stage>/celery.py`` calls: SystemExit with the lines, never a traceback
    of a failed import."""
    from services.stages import boot_settings

    assert boot_settings(max_range=5).max_range == 5
    clean_env.setenv("ONSEI_MAX_TASK_FAILURES", "0")
    clean_env.setenv("ONSEI_FILTER_MIN_OVRL", "nan")
    with pytest.raises(SystemExit) as e:
        boot_settings()
    lines = str(e.value.code).splitlines()
    assert lines[0].startswith("Error: ONSEI_MAX_TASK_FAILURES: ") and len(lines) == 2, lines
    assert lines[1].startswith("ONSEI_FILTER_MIN_OVRL: "), lines
    clean_env.setenv("ONSEI_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(SystemExit, match="missing.yaml: no such file"):
        boot_settings()
