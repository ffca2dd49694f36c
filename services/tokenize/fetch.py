"""The tokenize stage's model for ``onsei models fetch``: the codec checkpoint with the w2v-BERT
2.0 configs (and weights when the checkpoint lacks them), in the layout its loader reads."""

from __future__ import annotations

from pathlib import Path

from common.models.fetch import ModelSpec, from_hub, is_local
from services.tokenize.settings import TokenizeSettings


def configured(settings: TokenizeSettings) -> list[ModelSpec]:
    if is_local(settings.tokenize_neucodec_model):
        return []

    def _neucodec(dest: Path, repo: str = settings.tokenize_neucodec_model,
                  variant: str = settings.tokenize_codec) -> None:
        def go() -> None:
            from services.tokenize.source import fetch_from_hub

            fetch_from_hub(repo, variant, dest)
        from_hub(f"tokenize {repo}", go)
    repo = settings.tokenize_neucodec_model
    return [ModelSpec("tokenize", repo, repo, _neucodec)]
