"""No checkpoint runs code: a crafted pickle whose unpickling would write a marker file is
refused by the real loaders (Demucs's ``.th``, a pyannote checkpoint: a local file, a bag
folder, an s3 prefix, a hub id from the shared s3 model cache) and the marker never appears; a
cache entry changed after its fetch is refused by its sha256; a file the operator trusts by its
sha256 loads in full."""

from __future__ import annotations

import hashlib
from pathlib import Path

import boto3
import pytest

from common.models.cache import cached_entry
from common.models.pinned import TamperedEntry


@pytest.fixture(autouse=True, scope="module")
def _torch() -> None:
    # at run time, not collection (seconds in every pytest worker)
    pytest.importorskip("torch")


class _Plant:
    """Unpickled in full, this runs code: it writes ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


def _demucs_th(path: Path, marker: Path) -> Path:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"klass": _Plant(marker), "args": [], "kwargs": {}, "state": {}}, path)
    return path


def _pyannote_bin(path: Path, marker: Path) -> Path:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": {"w": torch.zeros(2)}, "hyper_parameters": {},
                "pyannote.audio": {"architecture": {
                    "module": "pyannote.audio.models.segmentation.PyanNet", "class": "PyanNet"}},
                "callbacks": _Plant(marker)}, path)
    return path


def test_the_crafted_files_do_run_code_when_unpickled_in_full(tmp_path: Path) -> None:
    """What the loaders refuse below is dangerous: torch's full unpickler runs it."""
    import torch

    for make in (_demucs_th, _pyannote_bin):
        marker = tmp_path / f"{make.__name__}.ran"
        f = make(tmp_path / f"{make.__name__}.pt", marker)
        torch.load(f, weights_only=False)
        assert marker.read_text() == "ran"


def _asr_settings(tmp: Path, **kw):
    from services.asr.settings import AsrSettings

    return AsrSettings(scratch_dir=str(tmp / "scratch"), model_cache=str(tmp / "cache"), **kw)


def test_a_pickled_demucs_package_that_runs_code_is_refused(tmp_path: Path) -> None:
    from services.asr.separation_model import SeparationModelError, load_separation_model

    marker = tmp_path / "ran"
    one = _demucs_th(tmp_path / "955717e8-8726e21a.th", marker)
    bag = tmp_path / "bag"
    _demucs_th(bag / "0badc0de-12345678.th", marker)
    (bag / "htdemucs.yaml").write_text("models: ['0badc0de']\n")
    sha = hashlib.sha256(one.read_bytes()).hexdigest()
    for spec in (str(one), f"file://{one}", str(bag)):
        with pytest.raises(SeparationModelError) as e:
            load_separation_model(spec, "htdemucs", _asr_settings(tmp_path))
        msg = str(e.value)
        assert "builtins.exec" in msg and "could run code" in msg
        assert "ONSEI_MODEL_TRUSTED_SHA256=" in msg and "ONSEI_ASR_SEPARATION_MODEL" in msg
        assert (sha in msg) == (spec != str(bag))  # the bag's file has its own path in it
    assert not marker.exists()


def _enhance_settings(tmp: Path, **kw):
    from services.enhance.settings import EnhanceSettings

    return EnhanceSettings(scratch_dir=str(tmp / "scratch"), **kw)


def _refused(spec: str, settings, marker: Path, says: str) -> str:
    from services.enhance.quality.overlap_model import OverlapModelError, load_segmentation

    with pytest.raises(OverlapModelError) as e:
        load_segmentation(spec, settings)
    msg = str(e.value)
    assert says in msg and "ONSEI_QUALITY_OVERLAP_MODEL" in msg, msg
    assert not marker.exists()
    return msg


def test_a_pyannote_checkpoint_that_runs_code_is_refused_from_everywhere(
        tmp_path: Path, s3_bucket: str) -> None:
    pytest.importorskip("pyannote.audio")
    marker = tmp_path / "ran"
    local = _pyannote_bin(tmp_path / "ckpt" / "pytorch_model.bin", marker)
    s3 = boto3.client("s3")
    s3.upload_file(str(local), s3_bucket, "seg/pytorch_model.bin")  # an s3 prefix
    s3.upload_file(str(local), s3_bucket, "cache/evil--seg/pytorch_model.bin")  # shared cache
    s = _enhance_settings(tmp_path, model_cache=f"s3://{s3_bucket}/cache")
    for spec in (str(local), str(local.parent), f"s3://{s3_bucket}/seg", "evil/seg"):
        msg = _refused(spec, s, marker, "could run code")
        assert "builtins.exec" in msg and "ONSEI_MODEL_TRUSTED_SHA256=" in msg


def test_a_cache_entry_changed_after_its_fetch_is_refused_by_its_sha256(
        tmp_path: Path, s3_bucket: str) -> None:
    pytest.importorskip("pyannote.audio")
    from fixtures.pyannote_models import write_checkpoint
    from services.enhance.quality.overlap_model import load_segmentation

    good = write_checkpoint(tmp_path / "good" / "pytorch_model.bin")
    boto3.client("s3").upload_file(str(good), s3_bucket, "cache/org--seg/pytorch_model.bin")
    s = _enhance_settings(tmp_path, model_cache=f"s3://{s3_bucket}/cache")
    assert load_segmentation("org/seg", s) is not None  # fetched once, pinned by its manifest
    entry = tmp_path / "scratch" / "onsei-models" / "org--seg"
    assert cached_entry(entry) == entry
    # one byte changed in place: the same size, weights the fetch did not get
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (entry / "pytorch_model.bin").write_bytes(bytes(data))
    marker = tmp_path / "ran"
    msg = _refused("org/seg", s, marker, "sha256 is")
    assert "changed after its fetch" in msg and "onsei models fetch" in msg
    with pytest.raises(TamperedEntry):
        cached_entry(entry)
    # the crafted checkpoint in its place is refused before it is read
    _pyannote_bin(entry / "pytorch_model.bin", marker)
    _refused("org/seg", s, marker, "changed size since the fetch")
    # restored, then a file added beside it
    (entry / "pytorch_model.bin").write_bytes(good.read_bytes())
    assert load_segmentation("org/seg", s) is not None
    (entry / "extra.bin").write_bytes(b"x")
    _refused("org/seg", s, marker, "extra.bin was added after the fetch")


def test_a_checkpoint_the_operator_trusts_by_its_sha256_loads_in_full(tmp_path: Path) -> None:
    """A checkpoint holding a class no loader allows (harmless here: a date) is refused, and
    loads once its sha256 is in ONSEI_MODEL_TRUSTED_SHA256."""
    import datetime

    import torch

    pytest.importorskip("pyannote.audio")
    from fixtures.pyannote_models import write_checkpoint
    from services.enhance.quality.overlap_model import load_segmentation

    path = write_checkpoint(tmp_path / "m" / "pytorch_model.bin")
    ckpt = torch.load(path, weights_only=False)
    ckpt["trained_on"] = datetime.date(2026, 12, 7)
    torch.save(ckpt, path)
    msg = _refused(str(path), _enhance_settings(tmp_path), tmp_path / "none",
                   "datetime.date")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert f"ONSEI_MODEL_TRUSTED_SHA256={sha}" in msg
    trusted = _enhance_settings(tmp_path, model_trusted_sha256=f"{'0' * 64}, {sha}")
    assert load_segmentation(str(path), trusted) is not None


def test_the_trust_setting_takes_sha256_only() -> None:
    from pydantic import ValidationError

    from common.settings import Settings

    with pytest.raises(ValidationError, match="is not a sha256"):
        Settings(model_trusted_sha256="yes")


def test_an_s3_cache_entry_whose_files_differ_from_its_manifest_is_not_fetched(
        tmp_path: Path, s3_bucket: str) -> None:
    from common.models.cache import MANIFEST, resolve_model_dir, write_manifest
    from common.settings import Settings

    src = tmp_path / "src" / "org--m"
    src.mkdir(parents=True)
    (src / "model.bin").write_bytes(b"weights" * 10)
    write_manifest(src, "org/m", "test")
    s3 = boto3.client("s3")
    s3.upload_file(str(src / MANIFEST), s3_bucket, f"cache/org--m/{MANIFEST}")
    s3.put_object(Bucket=s3_bucket, Key="cache/org--m/model.bin", Body=b"WEIGHTS" * 10)
    s = Settings(model_cache=f"s3://{s3_bucket}/cache", scratch_dir=str(tmp_path / "scratch"))
    with pytest.raises(TamperedEntry, match="model.bin's sha256 is"):
        resolve_model_dir("org/m", s)
    assert not (tmp_path / "scratch" / "onsei-models" / "org--m").exists()
