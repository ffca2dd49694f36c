"""Checks a command makes before any work: is the input there, can the output be written.

Each failure is one line (a :class:`PreflightError`) that a CLI prints as it is: an output root
that is a file, a directory that cannot be written, an input URL with nothing under it, a bucket
that does not exist, S3 without credentials. Run before any model loads or message is sent.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from common.settings import Settings
from common.storage import StorageError, open_store, split_url


class PreflightError(Exception):
    """A one-line reason the command cannot start."""


def check_output_root(url: str, settings: Settings) -> None:
    """The output root exists or can be made, and a file can be written and removed there."""
    scheme, _bucket, path = split_url(url)
    if scheme == "file":
        _check_local_dir_writable(Path(path), url)
        return
    try:  # a LIST names a missing bucket (a HEAD's 404 would not) and leaves nothing behind
        next(iter(open_store(url, settings).list("_ledger/")), None)
    except StorageError as e:
        raise PreflightError(f"output {url}: {e}") from None


def check_input_root(url: str, settings: Settings) -> None:
    """The input URL names something: a directory, or an S3 prefix with at least one object."""
    scheme, _bucket, path = split_url(url)
    if scheme == "file":
        p = Path(path)
        if not p.exists():
            raise PreflightError(f"input {url} does not exist")
        if not p.is_dir():
            raise PreflightError(f"input {url} is not a directory")
        return
    try:
        first = next(iter(open_store(url, settings).list("")), None)
    except StorageError as e:
        raise PreflightError(f"input {url}: {e}") from None
    if first is None:
        raise PreflightError(f"input {url} does not exist (no object under that prefix)")


def _check_local_dir_writable(p: Path, url: str) -> None:
    existing = next((a for a in (p, *p.parents) if a.exists()), None)
    if existing is not None and not existing.is_dir():
        what = "is a file" if existing == p else f"is under a file ({existing})"
        raise PreflightError(f"output root {url} {what}, not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".onsei-preflight-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise PreflightError(f"output root {url} is not writable: "
                             f"{e.strerror or type(e).__name__}") from None
