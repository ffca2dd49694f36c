"""The model cache (``ONSEI_MODEL_CACHE``): where workers look for weights first, so spot nodes
never depend on a model hub at boot. Filled by ``onsei models fetch``; shown by
``onsei models list``.

Layout: one *entry* (a directory) per model under the cache root, named as the stage loaders
look for it: ``<name>`` with ``/`` -> ``--`` (faster-whisper sizes and hub ids, Sidon),
``<owner>/<name>`` (NeuCodec), ``bundled/<name>`` (``bundled:whisper-base``). Each entry fetched by
onsei carries ``.onsei-manifest.json`` (files, sizes, sha256) so a copy can be verified anywhere.
The cache may be a local dir or an ``s3://`` prefix; with s3, local copies live in
``<ONSEI_SCRATCH_DIR>/onsei-models`` (as in every stage's loader).

Stage loaders may call :func:`resolve_model_dir` (``name`` as configured, e.g.
``settings.sidon_model``): it returns a local directory with the entry's files, or None.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from common.settings import Settings
from common.storage import Store, open_store, split_url

log = logging.getLogger(__name__)

MANIFEST = ".onsei-manifest.json"
BUNDLED_PREFIX = "bundled:"


def entry_names(name: str) -> list[str]:
    """Cache entry names a model may live under (the stages' layouts, most specific first)."""
    name = name.strip().strip("/")
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
    base = PurePosixPath(rel).name
    return (base.endswith(".lock") or ".part" in base or base.startswith(".tmp")
            or (base.startswith(".") and base != MANIFEST and not base.startswith(".complete")))


def _has_files(d: Path) -> bool:
    return d.is_dir() and any(p.is_file() and not _ignored(p.name) for p in d.iterdir())


def resolve_model_dir(name: str, settings: Settings) -> Path | None:
    """A local directory with model ``name``'s cached files, or None when the cache lacks it.
    From an ``s3://`` cache the entry is downloaded once (files already present with the
    right size are kept)."""
    root = local_root(settings)
    for entry in entry_names(name):
        if _has_files(root / entry):
            return root / entry
    if not is_remote(settings.model_cache):
        return None
    store = open_store(settings.model_cache, settings)
    for entry in entry_names(name):
        keys = [k for k in store.list(f"{entry}/") if not _ignored(k)]
        if not keys:
            continue
        dest = root / entry
        for key in keys:
            target = dest / key[len(entry) + 1:]
            if target.is_file() and target.stat().st_size == store.size(key):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            store.get_file(key, target)
        log.info("model %s fetched from %s/%s", name, settings.model_cache, entry)
        return dest
    return None


# --- manifests and listing ------------------------------------------------------------------------
def sha256_file(path: Path, chunk: int = 8 * 1024 * 1024) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def local_files(entry_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(entry_dir).as_posix()) for p in entry_dir.rglob("*")
                  if p.is_file() and not _ignored(p.name) and p.name != MANIFEST)


def write_manifest(entry_dir: Path, name: str, source: str) -> dict:
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
    files: dict[str, dict] = field(default_factory=dict)  # rel -> {size, sha256 | None}
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
    rels = [str(p.relative_to(root).as_posix()) for p in root.rglob("*")
            if p.is_file() and not _ignored(p.name)]
    return [_local_entry(root / e, e, checksums) for e in sorted(_group(rels))]


def _check(entry: CacheEntry, manifest: dict | None) -> None:
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
