"""A fetched model-cache entry is pinned: its manifest (written when it was fetched: files,
sizes, sha256; common/models/cache.py) is checked whenever a loader takes the entry, so a file
changed, swapped or added in the cache after the fetch is refused, never loaded. Together with
loading that unpickles no code (common/models/safe_load.py), writing into a shared cache cannot
make a worker run anything.

The check hashes every file of the entry (about 1 s a GB): once per process and entry, again
only when a file's size, mtime or inode changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.errors import ModelUnavailable

_verified: dict[str, tuple[tuple[str, int, int, int], ...]] = {}


class TamperedEntry(ModelUnavailable):
    """A cache entry no longer holds what its manifest pinned when it was fetched."""


def _stamp(d: Path, rels: list[str]) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for r in rels:
        st = (d / r).stat()
        out.append((r, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def verify_entry(d: Path, manifest_name: str, local_files: Callable[[Path], list[str]],
                 sha256_file: Callable[[Path], str]) -> None:
    """:class:`TamperedEntry` unless every model file of ``d`` is in its manifest with the size
    and sha256 written at fetch, and every file the manifest names is there. The cache's own
    layout (its manifest's name, which files are model files, the hash) is handed in by
    common/models/cache.py, which calls this."""
    try:
        manifest: dict[str, Any] = json.loads((d / manifest_name).read_text())
        want: dict[str, dict[str, Any]] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TamperedEntry(_why(d, f"its manifest {manifest_name} does not read ({e})")) from None
    have = local_files(d)
    extra = sorted(set(have) - set(want))
    if extra:
        raise TamperedEntry(_why(d, f"{', '.join(extra[:5])} was added after the fetch"))
    missing = sorted(set(want) - set(have))
    if missing:
        raise TamperedEntry(_why(d, f"{', '.join(missing[:5])} is gone"))
    stamp = _stamp(d, have)
    if _verified.get(str(d)) == stamp:
        return
    for rel in have:
        if (d / rel).stat().st_size != want[rel].get("size"):
            raise TamperedEntry(_why(d, f"{rel} changed size since the fetch"))
        sha, pinned = sha256_file(d / rel), want[rel].get("sha256")
        if sha != pinned:
            raise TamperedEntry(_why(d, f"{rel}'s sha256 is {sha}, not the {pinned} written "
                                        "when it was fetched"))
    _verified[str(d)] = stamp


def _why(d: Path, what: str) -> str:
    return (f"the model cache entry {d} is refused: {what}. It was changed after its fetch; "
            "remove it and fetch it again (`onsei models fetch`)")
