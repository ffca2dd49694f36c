"""A small tmpfs of a test's own, to fill a worker's scratch disk (root and mount needed: the
test is skipped elsewhere)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(path: Path, mib: int, leave_kib: int | None = None) -> Iterator[Path]:
    """``path`` mounted as a ``mib`` MiB tmpfs; with ``leave_kib``, filled to leave that much."""
    path.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(path)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        if leave_kib is not None:
            (path / "filler").write_bytes(b"\0" * (mib * 1024**2 - leave_kib * 1024))
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def resize(path: Path, mib: int) -> None:
    """Grow a mounted tmpfs (the operator gives the node its disk back)."""
    subprocess.run(["mount", "-o", f"remount,size={mib}m", str(path)], check=True)
