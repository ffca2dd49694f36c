"""``ONSEI_TOKENIZE_NEUCODEC_MODEL`` -> a local, self-sufficient model directory.

A local dir is used as is; an ``s3://`` prefix is downloaded once into the model cache; a hub id
is looked up in ``ONSEI_MODEL_CACHE`` first (dir or s3 prefix), then fetched from the hub
into the cache with the semantic model's configs beside it, so later loads never need the hub.
Every fetch is common.models.cache.fetch_entry (once per node, under the entry's lock, published
whole with its manifest), so a half-downloaded directory is never used.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import urlparse

from common.models.cache import cached_entry, download_prefix, fetch_entry, local_root
from common.settings import Settings
from services.tokenize.known_configs import SEMANTIC_HUB_IDS
from services.tokenize.loader import ModelLoadError, checkpoint_file

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def usable(d: Path) -> bool:
    """What a model directory put into the cache by hand must hold: a checkpoint (loader.py
    falls back on the known configs of the semantic model when they are not beside it)."""
    return any((d / n).is_file() for n in ("pytorch_model.bin", "model.safetensors"))


def fetch_prefix(url: str, dest: Path, settings: Settings) -> Path:
    """Download every object under an s3 prefix into ``dest`` (once per node)."""

    def fill(d: Path) -> None:
        if not download_prefix(url, settings, d):
            raise ModelLoadError(f"no objects under {url}: upload the model directory there")

    return fetch_entry(dest, fill, url)


def _s3_has(url: str, settings: Settings) -> bool:
    from common.storage import open_store

    try:
        return any(True for _ in open_store(url, settings).list(""))
    except Exception:  # noqa: BLE001
        return False


def fetch_from_hub(repo_id: str, variant: str, dest: Path) -> Path:
    """Checkpoint + the semantic model's configs (and weights, if the checkpoint lacks them)."""
    from common.models.hub import hub_unavailable

    try:
        why = hub_unavailable()
        if why:
            raise RuntimeError(f"the hub is not usable from here: {why}")
        from huggingface_hub import hf_hub_download, snapshot_download

        def fill(d: Path) -> None:
            ckpt = Path(hf_hub_download(repo_id, "pytorch_model.bin"))
            shutil.copyfile(ckpt, d / "pytorch_model.bin")
            sem = SEMANTIC_HUB_IDS[variant]
            shutil.copyfile(hf_hub_download(sem, "config.json"), d / "semantic_config.json")
            shutil.copyfile(hf_hub_download(sem, "preprocessor_config.json"),
                            d / "preprocessor_config.json")
            if not _carries_semantic(d / "pytorch_model.bin"):
                snapshot_download(sem, local_dir=str(d / "semantic_model"))

        return fetch_entry(dest, fill, repo_id)
    except ModelLoadError:
        raise
    except Exception as e:
        raise ModelLoadError(
            f"cannot fetch {repo_id} from the Hugging Face hub ({type(e).__name__}: "
            f"{str(e)[:200]}). Offline? Download it elsewhere (pytorch_model.bin, plus "
            f"{SEMANTIC_HUB_IDS[variant]}'s config.json as semantic_config.json and "
            "preprocessor_config.json) and set ONSEI_TOKENIZE_NEUCODEC_MODEL to that directory or "
            f"to an s3:// prefix holding it, or place it at ONSEI_MODEL_CACHE/{repo_id}; "
            "`onsei models fetch` on a machine with hub access fills the model cache "
            "(`--to s3://bucket/models` to share it)") from e


def _carries_semantic(path: Path) -> bool:
    import torch

    sd = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    return any(k.startswith("semantic_model.") for k in sd)


def resolve_model_dir(spec: str, variant: str, settings: Settings) -> Path:
    if spec.startswith("file://"):
        spec = urlparse(spec).path
    local = Path(spec).expanduser()
    if local.is_dir():
        checkpoint_file(local)  # a clear error now if it is not a model directory
        return local
    cache = local_root(settings)
    if spec.startswith("s3://"):
        parsed = urlparse(spec)
        return fetch_prefix(spec, cache / "s3" / parsed.netloc / parsed.path.strip("/"), settings)
    if HUB_ID.match(spec):
        cached = cache / spec
        if cached_entry(cached, usable) is not None:
            return cached
        if settings.model_cache.startswith("s3://"):
            url = f"{settings.model_cache.rstrip('/')}/{spec}"
            if _s3_has(url, settings):
                return fetch_prefix(url, cached, settings)
        return fetch_from_hub(spec, variant, cached)
    raise ModelLoadError(f"ONSEI_TOKENIZE_NEUCODEC_MODEL={spec!r} is not a directory, an s3:// "
                         "prefix or a hub id (owner/name)")
