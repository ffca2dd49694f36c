"""The enhance stage's model for ``onsei models fetch``: Sidon's TorchScript pair (the other
enhancers ship in wheels)."""

from __future__ import annotations

from pathlib import Path

from common.models.fetch import ModelSpec, from_hub, is_local
from services.enhance.settings import EnhanceSettings

SIDON_FILES = ["feature_extractor_cuda.pt", "decoder_cuda.pt", "feature_extractor_cpu.pt",
               "decoder_cpu.pt"]


def configured(settings: EnhanceSettings) -> list[ModelSpec]:
    if settings.enhance_backend != "sidon" or is_local(settings.enhance_sidon_model):
        return []

    def _sidon(dest: Path, repo: str = settings.enhance_sidon_model) -> None:
        from huggingface_hub import hf_hub_download

        from_hub(f"enhance {repo}", lambda: [hf_hub_download(repo, f, local_dir=str(dest))
                                             for f in SIDON_FILES])
    from common.models.weights import cache_name

    repo = settings.enhance_sidon_model
    return [ModelSpec("enhance", repo, cache_name(repo), _sidon)]
