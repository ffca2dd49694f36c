"""Find and load the Whisper model named by ``ONSEI_ASR_MODEL`` (the ASR stage's model; enhance's
fidelity check loads the same one, or ``ONSEI_QUALITY_FIDELITY_MODEL``, on its own device).

Accepted names, tried in this order:
  ``bundled:whisper-base``   assembled from installed package data into the model cache;
  a local directory          a CTranslate2 model (``model.bin`` + ``config.json`` + tokenizer);
  a model-cache entry        ``<ONSEI_MODEL_CACHE>/<name>`` (``/`` in hub ids becomes ``--``;
                             common/models/cache.py); an ``s3://`` cache is fetched locally once;
  a size name or hub id      ``large-v3-turbo``, ``Systran/faster-whisper-small``: the Hugging
                             Face cache, else a download, else a clear error (workers are often
                             offline; ``onsei models fetch`` puts weights into the model cache).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.errors import ModelUnavailable
from common.models.cache import BUNDLED_PREFIX
from common.models.device import ctranslate2_cuda_available, resolve_device, split_device
from services.whisper.bundled import ensure_bundled
from services.whisper.bundled import version as bundled_version
from services.whisper.settings import WhisperSettings

log = logging.getLogger(__name__)

REQUIRED_FILES = ("model.bin", "config.json")


@dataclass(frozen=True)
class ResolvedModel:
    name: str  # as configured
    path: str  # local directory handed to WhisperModel
    version: str


def _is_model_dir(p: Path) -> bool:
    return p.is_dir() and all((p / f).is_file() for f in REQUIRED_FILES)


def resolve_model(settings: WhisperSettings) -> ResolvedModel:
    from common.models.cache import entry_names, local_root, resolve_model_dir

    name = settings.asr_model.strip()
    if name.startswith(BUNDLED_PREFIX):
        short = name[len(BUNDLED_PREFIX):]
        cached = resolve_model_dir(name, settings, REQUIRED_FILES)  # in an (s3) cache?
        if cached is not None and _is_model_dir(cached):
            return ResolvedModel(name, str(cached), bundled_version(short))
        path = ensure_bundled(short, local_root(settings), settings.asr_bundled_data_dir)
        return ResolvedModel(name, str(path), bundled_version(short))
    direct = Path(name).expanduser()
    if _is_model_dir(direct):
        return ResolvedModel(name, str(direct), "local")
    if direct.is_absolute() or name.startswith((".", "~")):
        raise ModelUnavailable(f"ONSEI_ASR_MODEL={name!r} is not a CTranslate2 model directory "
                               f"(needs {', '.join(REQUIRED_FILES)} and tokenizer.json)")
    cached = resolve_model_dir(name, settings, REQUIRED_FILES)
    if cached is not None:
        if not _is_model_dir(cached):
            raise ModelUnavailable(f"model cache entry {cached} for {name!r} lacks "
                                   f"{', '.join(REQUIRED_FILES)}: fetch it again "
                                   "(`onsei models fetch`)")
        return ResolvedModel(name, str(cached), "cache:" + entry_names(name)[0])
    return _resolve_hub(name, settings)


def _hub_version(path: str) -> str:
    p = Path(path)  # .../models--org--name/snapshots/<revision>
    return p.name if p.parent.name == "snapshots" else "local"


def _resolve_hub(name: str, settings: WhisperSettings) -> ResolvedModel:
    from faster_whisper.utils import download_model

    try:
        path = download_model(name, local_files_only=True)
        return ResolvedModel(name, path, _hub_version(path))
    except Exception as e:  # noqa: BLE001 - not in the HF cache: try the network next
        log.debug("%s not in the Hugging Face cache: %s", name, e)
    from common.models.hub import hub_unavailable

    why = hub_unavailable()
    err: Exception | None = RuntimeError(f"the hub is not usable from here: {why}") if why else None
    if not why:
        try:
            path = download_model(name)
            return ResolvedModel(name, path, _hub_version(path))
        except Exception as e:  # noqa: BLE001 - no network, unknown id, ...
            err = e
    raise ModelUnavailable(
        f"ASR model {name!r} is not available offline"
        + (f" and could not be downloaded ({type(err).__name__}: {str(err)[:160]})" if err else "")
        + f". Use ONSEI_ASR_MODEL=bundled:whisper-base (offline, from onsei[asr-offline]), a local "
        f"CTranslate2 directory, or put the weights into the model cache "
        f"({settings.model_cache}/{name.replace('/', '--')}) with `onsei models fetch`."
    ) from err


@dataclass
class LoadedModel:
    model: Any  # faster_whisper.WhisperModel
    pipeline: Any  # faster_whisper.BatchedInferencePipeline
    resolved: ResolvedModel
    device: str
    compute_type: str
    # a CTranslate2 Whisper on its own threads for beam search on a CPU (load_model's decoder),
    # of one replica per file in flight
    decoder: Any | None = None

    def info(self) -> dict[str, Any]:
        import faster_whisper

        return {"model": self.resolved.name, "version": self.resolved.version,
                "model_path": self.resolved.path, "device": self.device,
                "compute_type": self.compute_type,
                "faster_whisper": faster_whisper.__version__}


def resolve_compute_type(compute_type: str, device: str) -> str:
    """``auto``: float16 on a GPU (half the memory), int8 on CPU (CTranslate2's fast path)."""
    compute_type = (compute_type or "auto").lower()
    if compute_type == "auto":
        return "float16" if device.startswith("cuda") else "int8"
    return compute_type


def load_model(settings: WhisperSettings, device: str = "auto",
               decoder: bool = False, decoder_replicas: int = 1) -> LoadedModel:
    """``device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (each stage has its own device
    setting: ASR's, or enhance's for the fidelity check).

    ``decoder`` on a CPU: a second replica of the model on ``asr_cpu_decoder_threads`` threads
    for beam search. Its steps multiply a few rows by small matrices, which more threads make
    slower: 4 rows of Whisper base int8 at beam 5 took 1.40 s on one thread and 1.67-1.74 s
    (2.0-2.1 CPU s) on two or CTranslate2's default, on 2 cores, where the encoder's large
    matrices take every core (1.48-1.60 s against 2.47 s for 4 rows). A replica's threads are
    fixed when it loads, hence two; it costs the weights again and its own buffers (docs/asr.md,
    "Choosing decoding and the allocator"). ``decoder_replicas``: that many such replicas in the
    one decoder, sharing its weights, so that as many beam searches (of files in flight,
    services/asr/overlap.py) run side by side instead of queueing for one thread."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    resolved = resolve_model(settings)
    device = resolve_device(device, "ONSEI_ASR_DEVICE", ctranslate2_cuda_available)
    compute_type = resolve_compute_type(settings.asr_compute_type, device)
    log.info("loading ASR model %s from %s on %s (%s)", resolved.name, resolved.path, device,
             compute_type)
    kind, index = split_device(device)
    model = WhisperModel(resolved.path, device=kind, device_index=index,
                         compute_type=compute_type, cpu_threads=settings.asr_cpu_threads,
                         local_files_only=True)
    second = None
    if decoder and kind == "cpu" and settings.asr_cpu_decoder_threads:
        import ctranslate2

        second = ctranslate2.models.Whisper(str(resolved.path), device="cpu",
                                            compute_type=compute_type,
                                            intra_threads=settings.asr_cpu_decoder_threads,
                                            inter_threads=max(1, decoder_replicas))
    return LoadedModel(model, BatchedInferencePipeline(model), resolved, device, compute_type,
                       second)
