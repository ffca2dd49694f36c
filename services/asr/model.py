"""Find and load the Whisper model named by ``ONSEI_ASR_MODEL``.

Accepted names, tried in this order:
  ``bundled:whisper-base``   assembled from installed package data into the model cache;
  a local directory          a CTranslate2 model (``model.bin`` + ``config.json`` + tokenizer);
  a model-cache entry        ``<ONSEI_MODEL_CACHE>/<name>`` (``/`` in hub ids becomes ``--``);
                             the cache may be an ``s3://`` prefix, then it is fetched locally once;
  a size name or hub id      ``large-v3-turbo``, ``Systran/faster-whisper-small``: the Hugging
                             Face cache, else a download, else a clear error (workers are often
                             offline; ``onsei models fetch`` puts weights into the model cache).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.settings import Settings
from services.asr.bundled import ensure_bundled
from services.asr.bundled import version as bundled_version
from services.asr.device import resolve_compute_type, resolve_device

log = logging.getLogger(__name__)

BUNDLED_PREFIX = "bundled:"
REQUIRED_FILES = ("model.bin", "config.json")


class ModelUnavailable(RuntimeError):
    """The model cannot be had here; the message says what to do."""


@dataclass(frozen=True)
class ResolvedModel:
    name: str  # as configured
    path: str  # local directory handed to WhisperModel
    version: str


def _is_model_dir(p: Path) -> bool:
    return p.is_dir() and all((p / f).is_file() for f in REQUIRED_FILES)


def _cache_entry_name(name: str) -> str:
    return name.replace("/", "--")


def _local_cache_root(settings: Settings) -> Path:
    if settings.model_cache.startswith("s3://"):  # s3 cache: local copies live in scratch
        return Path(settings.scratch_dir) / "onsei-models"
    return Path(settings.model_cache).expanduser()


def _fetch_s3_entry(settings: Settings, entry: str) -> Path | None:
    from common.storage import open_store

    store = open_store(settings.model_cache, settings)
    keys = [k for k in store.list(f"{entry}/") if not k.endswith("/")]
    if not any(k.rsplit("/", 1)[-1] == "model.bin" for k in keys):
        return None
    dest = _local_cache_root(settings) / entry
    for key in keys:
        target = dest / key[len(entry) + 1:]
        if not target.is_file() or target.stat().st_size != store.size(key):
            target.parent.mkdir(parents=True, exist_ok=True)
            store.get_file(key, target)
    return dest if _is_model_dir(dest) else None


def _hub_version(path: str) -> str:
    # .../models--org--name/snapshots/<revision>
    p = Path(path)
    return p.name if p.parent.name == "snapshots" else "local"


def resolve_model(settings: Settings) -> ResolvedModel:
    name = settings.asr_model.strip()
    if name.startswith(BUNDLED_PREFIX):
        short = name[len(BUNDLED_PREFIX):]
        path = ensure_bundled(short, _local_cache_root(settings))
        return ResolvedModel(name, str(path), bundled_version(short))
    direct = Path(name).expanduser()
    if _is_model_dir(direct):
        return ResolvedModel(name, str(direct), "local")
    if direct.is_absolute() or name.startswith("."):
        raise ModelUnavailable(f"ONSEI_ASR_MODEL={name!r} is not a CTranslate2 model directory "
                               f"(needs {', '.join(REQUIRED_FILES)} and tokenizer.json)")
    entry = _cache_entry_name(name)
    cached = _local_cache_root(settings) / entry
    if _is_model_dir(cached):
        return ResolvedModel(name, str(cached), "cache")
    if settings.model_cache.startswith("s3://"):
        fetched = _fetch_s3_entry(settings, entry)
        if fetched is not None:
            return ResolvedModel(name, str(fetched), "cache")
    return _resolve_hub(name, settings)


def _resolve_hub(name: str, settings: Settings) -> ResolvedModel:
    from faster_whisper.utils import download_model

    try:
        path = download_model(name, local_files_only=True)
        return ResolvedModel(name, path, _hub_version(path))
    except Exception:
        pass
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    err: Exception | None = None
    if not offline:
        try:
            path = download_model(name)
            return ResolvedModel(name, path, _hub_version(path))
        except Exception as e:  # no network, unknown id, ...
            err = e
    raise ModelUnavailable(
        f"ASR model {name!r} is not available offline"
        + (f" and could not be downloaded ({type(err).__name__}: {str(err)[:160]})" if err else "")
        + f". Use ONSEI_ASR_MODEL=bundled:whisper-base (offline, from onsei[asr-offline]), a local "
        f"CTranslate2 directory, or put the weights into the model cache "
        f"({settings.model_cache}/{_cache_entry_name(name)}) with `onsei models fetch`."
    ) from err


@dataclass
class LoadedModel:
    model: Any  # faster_whisper.WhisperModel
    pipeline: Any  # faster_whisper.BatchedInferencePipeline
    resolved: ResolvedModel
    device: str
    compute_type: str

    def info(self) -> dict[str, Any]:
        import faster_whisper

        return {"model": self.resolved.name, "version": self.resolved.version,
                "model_path": self.resolved.path, "device": self.device,
                "compute_type": self.compute_type,
                "faster_whisper": faster_whisper.__version__}


def load_model(settings: Settings) -> LoadedModel:
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    resolved = resolve_model(settings)
    device = resolve_device(settings.asr_device)
    compute_type = resolve_compute_type(settings.asr_compute_type, device)
    log.info("loading ASR model %s from %s on %s (%s)", resolved.name, resolved.path, device,
             compute_type)
    model = WhisperModel(resolved.path, device=device, compute_type=compute_type,
                         cpu_threads=settings.asr_cpu_threads, local_files_only=True)
    return LoadedModel(model, BatchedInferencePipeline(model), resolved, device, compute_type)
