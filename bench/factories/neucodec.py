"""Small random NeuCodec checkpoints built from the REAL ``neucodec`` classes, offline.

The library's constructors download ``facebook/w2v-bert-2.0`` (or ``ntu-spml/distilhubert``)
from the hub; here the two ``from_pretrained`` names inside ``neucodec.model`` are patched to
build from small configs instead. The rest of the model needs >= 16 semantic layers of hidden
size 1024 with 16 heads (neucodec) or hidden size 768 (distill), so only the intermediate size
is shrunk. Random weights give near-constant codes: use these for shapes and counts only.

The result is a self-sufficient model directory (what ``ONSEI_NEUCODEC_MODEL`` may name):
``pytorch_model.bin`` + ``semantic_config.json`` + ``preprocessor_config.json``. It is built once
per test session and linked into further directories.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from unittest import mock

FILES = ("pytorch_model.bin", "semantic_config.json", "preprocessor_config.json")
# 17 layers: one more than the codec reads (hidden_states[16]), so trimming is exercised.
SMALL_LAYERS = 17
_cache: dict[str, Path] = {}
_lock = threading.Lock()


def small_semantic_config(variant: str = "neucodec") -> dict:
    if variant == "neucodec":
        from transformers import Wav2Vec2BertConfig

        cfg = Wav2Vec2BertConfig(num_hidden_layers=SMALL_LAYERS, hidden_size=1024,
                                 num_attention_heads=16, intermediate_size=64)
    else:
        from transformers import HubertConfig

        cfg = HubertConfig(num_hidden_layers=2, hidden_size=768, num_attention_heads=12,
                           intermediate_size=64, feat_proj_layer_norm=False)
    return cfg.to_dict()


def small_preprocessor_config(variant: str = "neucodec") -> dict:
    if variant == "neucodec":
        from transformers import SeamlessM4TFeatureExtractor

        fe = SeamlessM4TFeatureExtractor(padding_value=1.0, return_attention_mask=True)
    else:
        from transformers import Wav2Vec2FeatureExtractor

        fe = Wav2Vec2FeatureExtractor(do_normalize=False, return_attention_mask=False)
    return fe.to_dict()


def build_small_model(variant: str = "neucodec", seed: int = 0):
    """The real ``NeuCodec`` / ``DistillNeuCodec`` with small random semantic parts (eval mode)."""
    import neucodec.model as nm
    import torch
    from transformers import AutoConfig, AutoFeatureExtractor, AutoModel

    torch.manual_seed(seed)
    sem_cfg = AutoConfig.for_model(**small_semantic_config(variant))
    pre_cfg = small_preprocessor_config(variant)
    fe_cls = getattr(__import__("transformers", fromlist=[pre_cfg["feature_extractor_type"]]),
                     pre_cfg["feature_extractor_type"])

    def model_from_config(_name: str, **kw):
        for k, v in kw.items():
            setattr(sem_cfg, k, v)
        return AutoModel.from_config(sem_cfg)

    def fe_from_config(_name: str, **_kw):
        return fe_cls(**{k: v for k, v in pre_cfg.items() if k != "feature_extractor_type"})

    model_cls_name = "Wav2Vec2BertModel" if variant == "neucodec" else "HubertModel"
    with mock.patch.object(getattr(nm, model_cls_name), "from_pretrained",
                           side_effect=model_from_config), \
            mock.patch.object(nm.AutoFeatureExtractor, "from_pretrained",
                              side_effect=fe_from_config):
        cls = nm.NeuCodec if variant == "neucodec" else nm.DistillNeuCodec
        model = cls(24_000, 480)
    del AutoFeatureExtractor
    return model.eval()


def _build_into(dest: Path, variant: str) -> None:
    import torch

    dest.mkdir(parents=True, exist_ok=True)
    model = build_small_model(variant)
    tmp = dest / ".pytorch_model.bin.part"
    torch.save(model.state_dict(), tmp)
    os.replace(tmp, dest / "pytorch_model.bin")
    (dest / "semantic_config.json").write_text(json.dumps(small_semantic_config(variant)))
    (dest / "preprocessor_config.json").write_text(json.dumps(small_preprocessor_config(variant)))


def build_small_neucodec(dir: str | Path, variant: str = "neucodec") -> Path:
    """A small random checkpoint directory at ``dir`` (built once per session, then linked)."""
    dest = Path(dir)
    with _lock:
        src = _cache.get(variant)
        if src is None or not (src / FILES[0]).is_file():
            _build_into(dest, variant)
            _cache[variant] = dest
            return dest
        if src.resolve() != dest.resolve():
            dest.mkdir(parents=True, exist_ok=True)
            for name in FILES:
                link = dest / name
                if not link.exists():
                    link.symlink_to((src / name).resolve())
        return dest
