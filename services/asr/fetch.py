"""The ASR stage's model for ``onsei models fetch``: bundled, or a faster-whisper hub model."""

from __future__ import annotations

from pathlib import Path

from common.models.cache import BUNDLED_PREFIX, entry_names
from common.models.fetch import FetchError, ModelSpec, from_hub, is_local
from services.asr.settings import AsrSettings

WHISPER_FILES = ["config.json", "preprocessor_config.json", "model.bin", "tokenizer.json",
                 "vocabulary.*"]


def _whisper_repo(name: str) -> str:
    """faster-whisper's size names -> CTranslate2 repos (faster_whisper.utils._MODELS)."""
    if "/" in name:
        return name
    try:
        from faster_whisper.utils import _MODELS
    except ImportError as e:
        raise FetchError(f"asr: size name {name!r} needs faster-whisper installed "
                         "(onsei[asr]) to map it to its repo, or give the hub id") from e
    if name not in _MODELS:
        raise FetchError(f"asr: unknown faster-whisper size {name!r}; known: {sorted(_MODELS)}")
    repo: str = _MODELS[name]
    return repo


def configured(settings: AsrSettings) -> list[ModelSpec]:
    asr = settings.asr_model.strip()
    if asr.startswith(BUNDLED_PREFIX):
        def _bundled(dest: Path, short: str = asr[len(BUNDLED_PREFIX):],
                     data_dir: str = settings.asr_bundled_data_dir) -> None:
            from services.whisper.bundled import assemble

            assemble(short, dest, data_dir)
        return [ModelSpec("asr", asr, entry_names(asr)[0], _bundled)]
    if is_local(asr):
        return []

    def _whisper(dest: Path, name: str = asr) -> None:
        from huggingface_hub import snapshot_download

        repo = _whisper_repo(name)
        from_hub(f"asr {name} ({repo})", lambda: snapshot_download(
            repo, local_dir=str(dest), allow_patterns=WHISPER_FILES))
    return [ModelSpec("asr", asr, entry_names(asr)[0], _whisper)]
