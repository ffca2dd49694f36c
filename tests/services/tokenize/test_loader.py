from __future__ import annotations

from pathlib import Path

import pytest

from common.models.cache import MANIFEST
from services.tokenize.loader import (
    CODEC_CONFIG,
    CheckpointError,
    ModelLoadError,
    check_keys,
    codec_sizes,
    load_codec,
)
from services.tokenize.source import resolve_model_dir
from tests.conftest import built_once


@pytest.fixture(scope="module")
def released_size_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random weights in the released sizes of every part but w2v-BERT's feed-forward (no
    codec_config.json), as the released checkpoint is laid out."""
    from fixtures.factories.neucodec import FULL_SIZE, build_small_neucodec

    return built_once(tmp_path_factory, "neucodec-released-size",
                      lambda d: build_small_neucodec(d, codec_sizes=FULL_SIZE))


def test_loaded_through_our_loader(codec, neucodec_dir: Path) -> None:
    assert codec.variant == "neucodec" and codec.device == "cpu"
    assert codec.semantic_layers == 16  # the small model has 17: the 17th is never read
    assert len(codec.model.semantic_model.encoder.layers) == 16
    assert not codec.model.training


def test_key_check_names_missing_and_unexpected(codec) -> None:
    state = dict.fromkeys(codec.model.state_dict())  # no trim on this copy of the names
    full = {k: None for k in state}
    with pytest.raises(CheckpointError) as e:
        partial = {k: v for k, v in full.items() if not k.startswith("fc_prior.")}
        partial["something.else"] = None
        check_keys(codec.model, partial, Path("x.bin"), carries_semantic=True)
    assert e.value.missing == ["fc_prior.bias", "fc_prior.weight"]
    assert e.value.unexpected == ["something.else"]
    assert "fc_prior.weight" in str(e.value) and "something.else" in str(e.value)


def test_partial_checkpoint_file_rejected(tmp_path: Path, codec) -> None:
    import shutil

    import torch

    sd = codec.model.state_dict()
    keep = {k: v for k, v in sd.items() if k.startswith(("fc_prior.", "semantic_model."))}
    d = tmp_path / "partial"
    d.mkdir()
    torch.save(keep, d / "pytorch_model.bin")
    for n in ("semantic_config.json", "preprocessor_config.json", CODEC_CONFIG):
        shutil.copyfile(codec.directory / n, d / n)
    with pytest.raises(CheckpointError) as e:
        load_codec(d, "neucodec", "cpu")
    assert any(k.startswith("CodecEnc.") for k in e.value.missing)
    # the 17th layer is never run: a checkpoint without it is not missing anything
    assert not any(k.startswith("semantic_model.encoder.layers.16.") for k in e.value.missing)
    assert not any(k.startswith("semantic_model.") for k in e.value.missing)
    assert "CodecEnc." in str(e.value)


def test_released_sizes_load_and_encode_as_the_library(released_size_dir: Path) -> None:
    """Without codec_config.json the library's own sizes are built: a released checkpoint loads
    as before, and the batched encoder agrees with encode_code on it."""
    import numpy as np

    from services.tokenize.encode import encode_batch, prepare
    from tests.services.tokenize.conftest import tone

    assert not (released_size_dir / CODEC_CONFIG).exists()
    lc = load_codec(released_size_dir, "neucodec", "cpu")
    m = lc.model
    assert m.CodecEnc.ngf == 48 and m.CodecEnc.conv_final_block[1].in_channels == 1536
    assert len(m.generator.backbone.transformers) == 12
    x = tone(6_500, 16_000, seed=5)
    ours = encode_batch(m, [prepare(m, "neucodec", x)], "exact", True)
    ref = encode_batch(m, [prepare(m, "neucodec", x)], "library", True)
    np.testing.assert_allclose(ours[1][0], ref[1][0], atol=1e-4, rtol=0)
    assert (ours[0][0] == ref[0][0]).all()


def test_checkpoint_of_another_size_rejected(tmp_path: Path, codec,
                                             released_size_dir: Path) -> None:
    """Same keys, other shapes: a CheckpointError naming them and codec_config.json, both ways
    (a small checkpoint without its config, the released sizes with a small config)."""
    small_bare = tmp_path / "small-bare"
    released_small_cfg = tmp_path / "released-small-cfg"
    for d, src, cfg in ((small_bare, codec.directory, None),
                        (released_small_cfg, released_size_dir, codec.directory / CODEC_CONFIG)):
        d.mkdir()
        for n in ("pytorch_model.bin", "semantic_config.json", "preprocessor_config.json"):
            (d / n).symlink_to((src / n).resolve())
        if cfg is not None:
            (d / CODEC_CONFIG).symlink_to(cfg.resolve())
        with pytest.raises(CheckpointError) as e:
            load_codec(d, "neucodec", "cpu")
        # the encoder: same keys, other shapes; the decoder: other depth, other keys
        assert all(k.startswith("generator.backbone.") for k in e.value.missing
                   + e.value.unexpected), (e.value.missing, e.value.unexpected)
        assert any(k.startswith("CodecEnc.") for k in e.value.mismatched), e.value.mismatched
        assert "CodecEnc." in str(e.value) and CODEC_CONFIG in str(e.value)


@pytest.mark.parametrize("body", ['{"CodecEncoder": {"up_ratios": [4, 4, 4, 5]}}',
                                  '{"SemanticEncoder": {}}', '[1]', '{'])
def test_codec_config_sets_only_sizes_within_the_contract(tmp_path: Path, body: str) -> None:
    (tmp_path / CODEC_CONFIG).write_text(body)
    with pytest.raises(ModelLoadError, match=CODEC_CONFIG.replace(".", r"\.")):
        codec_sizes(tmp_path, "neucodec")


def test_not_a_model_dir(tmp_path: Path, make_settings) -> None:
    with pytest.raises(ModelLoadError, match="pytorch_model.bin"):
        resolve_model_dir(str(tmp_path), "neucodec", make_settings())


def test_hub_id_offline_says_what_to_do(tmp_path: Path, make_settings, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = make_settings(model_cache=str(tmp_path / "cache"))
    with pytest.raises(ModelLoadError) as e:
        resolve_model_dir("neuphonic/neucodec", "neucodec", s)
    assert "ONSEI_TOKENIZE_NEUCODEC_MODEL" in str(e.value) and "neuphonic/neucodec" in str(e.value)
    assert "`onsei models fetch`" in str(e.value)


def test_hub_id_found_in_model_cache(tmp_path: Path, make_settings, neucodec_dir: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "neuphonic").mkdir(parents=True)
    (cache / "neuphonic" / "neucodec").symlink_to(neucodec_dir)
    s = make_settings(model_cache=str(cache))
    assert resolve_model_dir("neuphonic/neucodec", "neucodec", s) == cache / "neuphonic/neucodec"


def test_s3_prefix_downloaded_once(s3_bucket: str, tmp_path: Path, make_settings) -> None:
    import boto3

    s3 = boto3.client("s3")
    for name, body in (("pytorch_model.bin", b"w" * 1000), ("semantic_config.json", b"{}")):
        s3.put_object(Bucket=s3_bucket, Key=f"models/nc/{name}", Body=body)
    s = make_settings(model_cache=str(tmp_path / "cache"))
    d = resolve_model_dir(f"s3://{s3_bucket}/models/nc", "neucodec", s)
    assert (d / "pytorch_model.bin").read_bytes() == b"w" * 1000
    assert (d / MANIFEST).is_file()  # fetched whole, published with its manifest
    s3.delete_object(Bucket=s3_bucket, Key="models/nc/pytorch_model.bin")
    assert resolve_model_dir(f"s3://{s3_bucket}/models/nc", "neucodec", s) == d  # cached
