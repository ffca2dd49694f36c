"""Find a model's files: a local dir, an s3 prefix (downloaded once), the model cache, or the hub.

Cache layout: ``<model cache>/<spec with "/" and ":" replaced by "--">/<files>``. A download
goes to a temp name and is renamed into place, under a file lock, so concurrent worker
processes on one node fetch each file once and never see half a file.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

from common.errors import ModelUnavailable
from common.modelcache import entry_lock, local_root
from common.settings import Settings
from common.storage import open_store, split_url

log = logging.getLogger(__name__)


class WeightsUnavailable(ModelUnavailable):
    pass


def cache_name(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", spec.strip("/")).strip("-")


def _have(dir_: Path, files: list[str]) -> bool:
    return all((dir_ / f).is_file() for f in files)


def _fetch_from_store(url: str, files: list[str], dest: Path, settings: Settings) -> bool:
    """Download ``files`` under ``url`` into ``dest``; False when any is missing there."""
    store = open_store(url, settings)
    with entry_lock(dest):
        if _have(dest, files):
            return True
        if not all(store.exists(f) for f in files):
            return False
        for f in files:
            if (dest / f).is_file():
                continue
            tmp = dest / f".{f}.part{os.getpid()}"
            store.get_file(f, tmp)
            os.replace(tmp, dest / f)
            log.info("model file %s fetched from %s", f, url)
    return True


def resolve_model_dir(spec: str, files: list[str], settings: Settings,
                      hint: Callable[[str], str]) -> Path:
    """A local directory holding ``files`` for model ``spec`` (dir, file://, s3://, hub id).

    ``hint(reason)`` builds the error message shown when nothing works.
    """
    scheme, _, path = split_url(spec) if "://" in spec else ("file", "", spec)
    if scheme == "file" and Path(path).expanduser().is_dir():
        d = Path(path).expanduser()
        if not _have(d, files):
            missing = [f for f in files if not (d / f).is_file()]
            raise WeightsUnavailable(hint(f"{d} lacks {', '.join(missing)}"))
        return d
    dest = local_root(settings) / cache_name(spec)
    if _have(dest, files):
        return dest
    if scheme == "s3":
        if _fetch_from_store(spec, files, dest, settings):
            return dest
        raise WeightsUnavailable(hint(f"{spec} lacks one of {', '.join(files)}"))
    if "://" in spec or spec.startswith(("/", ".", "~")):
        raise WeightsUnavailable(hint(f"{spec} is not a directory"))
    # A hub id: the shared model cache (s3) first, then the hub itself.
    if settings.model_cache.startswith("s3://"):
        url = settings.model_cache.rstrip("/") + "/" + cache_name(spec)
        try:
            if _fetch_from_store(url, files, dest, settings):
                return dest
        except Exception as e:  # noqa: BLE001 - fall through to the hub
            log.warning("model cache %s unusable: %s", url, e)
    return _from_hub(spec, files, dest, hint)


def _from_hub(repo_id: str, files: list[str], dest: Path, hint: Callable[[str], str]) -> Path:
    from common.hub import hub_unavailable

    why = hub_unavailable()
    if why:
        raise WeightsUnavailable(hint(f"{repo_id} is not cached and {why}"))
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as e:
        raise WeightsUnavailable(hint("huggingface_hub is not installed")) from e
    with entry_lock(dest):
        try:
            for f in files:
                if not (dest / f).is_file():
                    hf_hub_download(repo_id, f, local_dir=str(dest))
        except Exception as e:
            raise WeightsUnavailable(hint(f"{repo_id} could not be downloaded from the hub: "
                                          f"{type(e).__name__}: {str(e)[:200]}")) from e
    return dest
