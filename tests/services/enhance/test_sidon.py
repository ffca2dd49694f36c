"""The Sidon loader: local dir, s3 prefix (fetched once into the model cache), clear errors."""

from __future__ import annotations

from pathlib import Path

import boto3
import numpy as np
import pytest

from fixtures.factories.sidon import build_small_sidon
from services.enhance.backend import EnhancerUnavailable
from services.enhance.backends import make_backend
from services.enhance.sidon import SidonBackend


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_sidon(tmp_path_factory.mktemp("sidon"))


def test_front_end_is_built_offline_and_shapes_follow_the_contract(small_dir,
                                                                   make_settings) -> None:
    b = make_backend(make_settings(enhance_backend="sidon", enhance_sidon_model=str(small_dir),
                                   enhance_device="cpu"))
    assert isinstance(b, SidonBackend)
    b.load()
    rows = (0.1 * np.random.default_rng(0).standard_normal((2, 16000))).astype(np.float32)
    feats = b.prepare(rows)
    assert tuple(feats.shape) == (2, 50, 160)  # w2v-BERT filterbank, 50 Hz
    out = b.run(feats)
    assert out.shape == (2, 48000) and out.dtype == np.float32  # 960 samples per frame at 48 kHz
    assert np.isfinite(out).all() and out.std() > 0
    assert b.info()["enhancer_device"] == "cpu"


def test_loads_from_an_s3_prefix_once(small_dir, make_settings, s3_bucket, tmp_path) -> None:
    s3 = boto3.client("s3")
    for f in ("feature_extractor_cpu.pt", "decoder_cpu.pt"):
        s3.upload_file(str(small_dir / f), s3_bucket, f"models/sidon/{f}")
    cache = tmp_path / "cache"
    s = make_settings(enhance_backend="sidon", enhance_sidon_model=f"s3://{s3_bucket}/models/sidon",
                      enhance_device="cpu", model_cache=str(cache))
    b = SidonBackend(s)
    b.load()
    assert b.model_dir is not None and b.model_dir.is_relative_to(cache)
    assert sorted(p.name for p in b.model_dir.glob("*.pt")) == [
        "decoder_cpu.pt", "feature_extractor_cpu.pt"]  # only this device's pair
    s3.delete_object(Bucket=s3_bucket, Key="models/sidon/decoder_cpu.pt")
    again = SidonBackend(s)  # a second process: served from the cache, no download
    again.load()
    assert again.model_dir == b.model_dir


def test_missing_weights_say_what_to_do(make_settings, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = make_settings(enhance_backend="sidon", enhance_sidon_model="sarulab-speech/sidon-v0.1",
                      enhance_device="cpu", model_cache=str(tmp_path / "empty"))
    with pytest.raises(EnhancerUnavailable) as e:
        SidonBackend(s).load()
    msg = str(e.value)
    assert all(n in msg for n in ("ONSEI_ENHANCE_SIDON_MODEL", "ONSEI_ENHANCE_BACKEND=rnnoise",
                                  "HF_HUB_OFFLINE"))
    (tmp_path / "partial").mkdir()
    s2 = make_settings(enhance_backend="sidon", enhance_sidon_model=str(tmp_path / "partial"),
                       enhance_device="cpu")
    with pytest.raises(EnhancerUnavailable, match="lacks feature_extractor_cpu.pt"):
        SidonBackend(s2).load()
    with pytest.raises(EnhancerUnavailable, match="unknown ONSEI_ENHANCE_BACKEND"):
        make_backend(make_settings().model_copy(update={"enhance_backend": "magic"}))


def test_torch_filterbank_matches_transformers(small_dir, make_settings) -> None:
    from transformers import SeamlessM4TFeatureExtractor

    from services.enhance.fbank import TorchFbank

    rng = np.random.default_rng(1)
    rows = (0.1 * rng.standard_normal((3, 32320))).astype(np.float32)
    rows[1, :8000] = 0.0  # silence hits the mel floor
    rows[2] *= np.linspace(0, 1, rows.shape[1], dtype=np.float32)
    ref = SeamlessM4TFeatureExtractor(padding_value=1.0)(
        list(rows), sampling_rate=16000, return_tensors="np")["input_features"]
    import torch

    ours = TorchFbank("cpu")(torch.from_numpy(rows)).numpy()
    assert ours.shape == ref.shape == (3, 100, 160)
    assert np.abs(ours - ref).max() < 2e-3  # float32 vs the reference's float64
    # And the two front-end settings give the same restored audio.
    outs = []
    for fe in ("torch", "transformers"):
        b = SidonBackend(make_settings(enhance_sidon_model=str(small_dir), enhance_device="cpu",
                                       enhance_frontend=fe))
        b.load()
        outs.append(b.run(b.prepare(rows[:, :32000])))
    assert np.abs(outs[0] - outs[1]).max() < 1e-3


def test_out_of_gpu_memory_halves_the_batch(small_dir, make_settings) -> None:
    import torch

    b = SidonBackend(make_settings(enhance_sidon_model=str(small_dir), enhance_device="cpu"))
    b.load()
    rows = (0.1 * np.random.default_rng(2).standard_normal((4, 16000))).astype(np.float32)
    expected = b.run(b.prepare(rows))
    real_fe = b._fe
    sizes: list[int] = []

    def tight(x):
        sizes.append(x.shape[0])
        if x.shape[0] > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (test)")
        return real_fe(x)

    b._fe = tight
    got = b.run(b.prepare(rows))
    assert sizes[0] == 4 and sizes.count(1) == 4
    np.testing.assert_allclose(got, expected, atol=1e-5)
