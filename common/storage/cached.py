"""A local copy of a stored file as a cache: read it if it reads, else fetch the store's copy
again and read that. A corpus step keeps its published parts this way (dedup's pairs, the
speakers' centroids): the store holds them, a machine's copy may be damaged or stale."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from common.storage.base import Store

log = logging.getLogger(__name__)
T = TypeVar("T")


def fetch_copy(store: Store, key: str, cache: Path) -> Path:
    """The store's copy of ``key`` under ``cache`` (by its name), replacing the local one."""
    local = cache / Path(key).name
    local.unlink(missing_ok=True)
    store.get_file(key, local)
    return local


def read_cached(store: Store, key: str, cache: Path, read: Callable[[Path], T],
                error: Callable[[str], Exception]) -> T:
    """``read`` of the local copy of ``key``; a copy that does not read is fetched again, and a
    store's copy that does not read raises ``error(why)``, the why naming the key."""
    local = cache / Path(key).name
    if local.exists():
        try:
            return read(local)
        except Exception as e:  # noqa: BLE001 - a parser raises many types for a damaged file
            log.warning("the local copy of %s cannot be read (%s): fetched again", key,
                        type(e).__name__)
    try:
        return read(fetch_copy(store, key, cache))
    except Exception as e:  # noqa: BLE001 - the same, for the store's copy
        raise error(f"{key} cannot be read: {type(e).__name__}: {str(e)[:160]}") from None
