"""What ``onsei models fetch`` needs from a stage: the models its settings name and how to fetch
each into a cache entry. Each stage lists its own (``services/<stage>/fetch.py``, named by its
spec); services/ops/models.py walks the pipeline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common.errors import ModelUnavailable


class FetchError(ModelUnavailable):
    pass


@dataclass
class ModelSpec:
    stage: str
    name: str  # as configured
    entry: str  # cache entry (relative dir)
    fetch: Callable[[Path], None]  # fills the given entry directory


def is_local(spec: str) -> bool:
    """A directory or a URL: used where it is, nothing to fetch into the cache."""
    return "://" in spec or spec.startswith(("/", ".", "~")) or Path(spec).expanduser().is_dir()


def from_hub(what: str, fn: Callable[[], object]) -> None:
    """Run a hub download, or say clearly why it cannot be done from here."""
    from common.models.hub import hub_unavailable

    why = hub_unavailable()
    if why:
        raise FetchError(f"{what}: the Hugging Face hub is not usable from here ({why}). Fetch on "
                         "a machine with network, or fetch elsewhere and upload with --from DIR")
    try:
        fn()
    except Exception as e:
        raise FetchError(f"{what}: cannot download from the Hugging Face hub "
                         f"({type(e).__name__}: {str(e)[:200]}). No network? Fetch on a machine "
                         "that has it and upload with `onsei models fetch --from DIR --to URL`"
                         ) from e
