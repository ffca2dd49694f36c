"""Where ``onsei report --html FILE`` may write: a new file, or an earlier report (it carries
:data:`GENERATOR` in its head), never anything under the output root's ledger. Anything else
(a tar, a done record, which then reads as corrupt) is refused before the run is read, and the
report is written whole (a temporary file beside it, renamed over it)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from common.ledger.store import LEDGER
from common.storage import split_url

GENERATOR = '<meta name="generator" content="onsei report">'
# the head of reports written before GENERATOR existed: replacing one is what the user meant
_OLD_HEAD = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
             "<title>onsei run report</title>")
_HEAD_BYTES = 4096


class ReportTargetError(ValueError):
    """``--html FILE`` cannot receive the report (one line, nothing written)."""


def is_report(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return GENERATOR in head or head.startswith(_OLD_HEAD)


def check_html_target(path: Path, output_url: str) -> Path:
    """``path`` with its symlinks resolved, where the report may go; else ReportTargetError."""
    target = path.expanduser().resolve()
    scheme, _, root = split_url(output_url)
    if scheme == "file":
        ledger = Path(root).expanduser().resolve() / LEDGER
        if target == ledger or ledger in target.parents:
            raise ReportTargetError(f"--html {path} is under the output root's {LEDGER}/ "
                                    "(the run's records): choose a path outside it")
    if target.exists() and not (target.is_file() and is_report(target)):
        raise ReportTargetError(f"--html {path} exists and is not an onsei report: choose "
                                "another file")
    return target


def write_html(target: Path, html: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
