"""Spleeter as the separation backend, with random-weight checkpoints written in Deezer's TF
format (fixtures/spleeter_models.py) and loaded through the stage's own loader: the weights
land where Spleeter's graph has them, blocks that hold music are replaced by the vocals the
masks give, and every way a checkpoint can be wrong is refused at load with the setting named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fixtures.spleeter_models import tf_tensors, write_bundle, write_checkpoint
from services.asr.separation import Separator, separate
from services.asr.separation_model import SeparationModelError, load_separation_model
from services.asr.settings import AsrSettings
from services.asr.spleeter import SpleeterModel
from services.asr.tfbundle import BundleError, entries, read_bundle
from tests.services.asr.test_separation import _chords, _noise, _speech

SR = 16000


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("spleeter"))


@pytest.fixture(scope="module")
def model(ckpt: Path) -> SpleeterModel:
    return _load(str(ckpt), ckpt)


def _settings(tmp: Path, **kw) -> AsrSettings:
    return AsrSettings(input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
                       scratch_dir=str(tmp / "scratch"), model_cache=str(tmp / "cache"), **kw)


def _load(spec: str, tmp: Path) -> SpleeterModel:
    return load_separation_model(spec, "unused", _settings(tmp), "spleeter")


def test_the_bundle_reads_back_as_written(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    tensors = {"a/kernel": rng.standard_normal((5, 5, 2, 3)).astype(np.float32),
               "a/bias": rng.standard_normal(3).astype(np.float32),
               "b": np.float32(rng.standard_normal((7,))), "global_step": np.array(5, np.int64)}
    write_bundle(tmp_path, tensors)
    table = entries(tmp_path / "model.index")
    assert table["global_step"][:2] == (9, ()) and table["a/kernel"][:2] == (1, (5, 5, 2, 3))
    got = read_bundle(tmp_path)
    assert set(got) == {"a/kernel", "a/bias", "b"}  # the int64 step is not a weight
    for k, v in got.items():
        assert v.dtype == np.float32 and np.array_equal(v, tensors[k])


def test_the_weights_land_where_spleeters_graph_has_them(ckpt: Path, model: SpleeterModel) -> None:
    assert model.sources == ["vocals", "accompaniment"] and not model.training
    back = tf_tensors(model)  # what loaded, written back under the TF names: the same bytes
    for name, value in read_bundle(ckpt).items():
        assert np.array_equal(back[name], value), name
    # one layer of each kind by hand: TF's (h, w, in, out) kernel is torch's (out, in, h, w)
    tf = read_bundle(ckpt)
    assert np.array_equal(model.nets[1].down[0].weight.numpy(),
                          tf["conv2d_7/kernel"].transpose(3, 2, 0, 1))
    assert np.array_equal(model.nets[0].up[5].weight.numpy(),
                          tf["conv2d_transpose_5/kernel"].transpose(3, 2, 0, 1))
    assert np.array_equal(model.nets[1].up_bn[0].running_var.numpy(),
                          tf["batch_normalization_18/moving_variance"])
    assert np.array_equal(model.nets[0].out.bias.numpy(), tf["conv2d_6/bias"])


def test_the_masks_split_the_mix_between_the_instruments(model: SpleeterModel) -> None:
    import torch  # here, not at collection: seconds in every pytest worker

    wav = torch.from_numpy(np.stack([_chords(3.0), _noise(3.0)]))  # stereo, 16 k as if 44.1 k
    with torch.inference_mode():
        parts = [model.separate_source(wav, i) for i in range(2)]
    assert all(p.shape == wav.shape and torch.isfinite(p).all() for p in parts)
    # ratio masks sum to one below the 1024th bin: what is left is the mix above ~11 kHz
    rest = wav - parts[0] - parts[1]
    assert not torch.allclose(parts[0], wav, atol=1e-3)
    low = torch.fft.rfft(rest)[..., : int(rest.shape[-1] * 10000 / 44100)]
    assert low.abs().max() < 1e-2 * torch.fft.rfft(wav).abs().max()


def test_blocks_that_hold_music_get_spleeters_vocals(model: SpleeterModel) -> None:
    sep = Separator(model)
    assert sep.rate == 44100 and sep.channels == 2 and sep.index == 0
    clean, music = _noise(30.0), _chords(16.0)
    x = np.concatenate([clean, music])
    heard, treated = separate(x, 0.75, sep)
    assert treated == 1 and heard.shape == x.shape and heard.dtype == np.float32
    assert np.array_equal(heard[:clean.size], clean)
    assert np.isfinite(heard).all() and not np.allclose(heard[clean.size:], music, atol=1e-3)


def test_the_stage_decodes_spleeters_vocals(tmp_path: Path, ckpt: Path) -> None:
    from services.asr.stage import AsrStage
    from tests.services.asr.conftest import asr_settings

    index = str(ckpt / "model.index")  # the file, as the folder: both name the checkpoint
    stage = AsrStage(asr_settings(tmp_path, asr_separation_model=index,
                                  asr_separation_backend="spleeter"))
    stage.load()
    assert isinstance(stage._separator.model, SpleeterModel)  # type: ignore[union-attr]
    info = stage.model_info()
    assert info["separation"] == index and info["separation_backend"] == "spleeter"
    x = _chords(12.0)
    heard, treated = stage._heard(x)
    assert treated == 1 and heard.shape == x.shape and not np.array_equal(heard, x)
    speech = _speech()
    out = stage.transcribe_file("m", speech + _chords(speech.size / SR + 1.2)[:speech.size])
    assert out.line.key == "m" and out.extra["music_blocks"] == 1
    noise = _noise(6.0)
    heard, treated = stage._heard(noise)
    assert treated == 0 and np.array_equal(heard, noise)  # below the gate: bit-identical


def test_missing_and_broken_checkpoints_are_refused_at_load(tmp_path: Path, ckpt: Path) -> None:
    backend = "ONSEI_ASR_SEPARATION_BACKEND=spleeter"
    with pytest.raises(SeparationModelError, match=f"lacks model.index.*{backend}"):
        _load(str(tmp_path), tmp_path)
    with pytest.raises(SeparationModelError, match="nowhere does not exist"):
        _load(str(tmp_path / "nowhere"), tmp_path)
    with pytest.raises(SeparationModelError, match="model.meta is not model.index"):
        (tmp_path / "model.meta").write_bytes(b"")
        _load(str(tmp_path / "model.meta"), tmp_path)
    half = tmp_path / "half"
    half.mkdir()
    (half / "model.index").write_bytes((ckpt / "model.index").read_bytes())
    with pytest.raises(SeparationModelError, match="lacks model.data-00000-of-00001"):
        _load(str(half), tmp_path)
    (half / "model.data-00000-of-00001").write_bytes(b"\0" * 100)  # too short for the index
    with pytest.raises(SeparationModelError, match="does not fit model.data"):
        _load(str(half), tmp_path)
    (half / "model.index").write_bytes(b"not a table" * 10)
    with pytest.raises(SeparationModelError, match="not a TensorFlow checkpoint index"):
        _load(str(half / "model.index"), tmp_path)
    with pytest.raises(BundleError, match="no table magic"):
        entries(half / "model.index")


def test_wrong_variables_are_refused_with_their_names(tmp_path: Path) -> None:
    d = write_checkpoint(tmp_path / "shape", change={
        "conv2d_3/kernel": np.zeros((3, 3, 32, 64), np.float32)})
    wrong = r"conv2d_3/kernel has shape \(3, 3, 32, 64\), where .* has \(5, 5, 64, 128\)"
    with pytest.raises(SeparationModelError, match=wrong):
        _load(str(d), tmp_path)
    d = write_checkpoint(tmp_path / "gone", change={"batch_normalization_13/beta": None})
    with pytest.raises(SeparationModelError, match="lacks the variable batch_normalization_13"):
        _load(str(d), tmp_path)
    d = write_bundle(tmp_path / "other", {"dense/kernel": np.zeros((4, 4), np.float32)})
    with pytest.raises(SeparationModelError, match="0 convolution kernels"):
        _load(str(d), tmp_path)


def test_backends_are_told_apart(tmp_path: Path, ckpt: Path) -> None:
    with pytest.raises(SeparationModelError, match="set ONSEI_ASR_SEPARATION_BACKEND=spleeter"):
        load_separation_model(str(ckpt), "htdemucs", _settings(tmp_path))
    with pytest.raises(SeparationModelError, match="unknown separation backend 'open-unmix'"):
        load_separation_model(str(ckpt), "htdemucs", _settings(tmp_path), "open-unmix")
    with pytest.raises(ValueError, match="asr_separation_backend"):
        _settings(tmp_path, asr_separation_backend="open-unmix")


def test_an_s3_prefix_and_a_file_url_load_like_the_folder(s3_bucket: str, tmp_path: Path,
                                                           ckpt: Path) -> None:
    import boto3

    s3 = boto3.client("s3")
    for name in ("model.index", "model.data-00000-of-00001", "model.meta"):
        if (ckpt / name).is_file():
            s3.upload_file(str(ckpt / name), s3_bucket, f"models/2stems/{name}")
    m = _load(f"s3://{s3_bucket}/models/2stems", tmp_path)
    assert m.sources == ["vocals", "accompaniment"]
    assert (tmp_path / "cache").is_dir()  # fetched into the model cache
    assert _load(f"file://{ckpt}", tmp_path).sources == m.sources
    with pytest.raises(SeparationModelError, match="lacks model.index"):
        _load(f"s3://{s3_bucket}/models/elsewhere", tmp_path)
