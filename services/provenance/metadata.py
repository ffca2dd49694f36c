"""Per-file metadata given to ``onsei pack-audio``: a ``.json`` file beside an audio file
(``clip.json`` or ``clip.wav.json``), and/or a manifest (JSON lines or CSV with a ``path``
column, relative to the folder packed). The manifest's row wins field by field over the file
beside it. The fields are kept as given: asr reads them (services/provenance/record.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


class ManifestError(ValueError):
    """A manifest that cannot be read (named with its line)."""


def load_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """Relative path -> its metadata."""
    out: dict[str, dict[str, Any]] = {}
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        numbered = [(i + 2, dict(r)) for i, r in enumerate(rows)]
    else:
        numbered = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ManifestError(f"{path}:{i}: not JSON ({e})") from None
            numbered.append((i, row))
    for i, row in numbered:
        if not isinstance(row, dict) or not isinstance(row.get("path"), str) or not row["path"]:
            raise ManifestError(f"{path}:{i}: a row needs a \"path\" (relative to the folder)")
        rel = Path(row.pop("path")).as_posix()  # "./a.wav" -> "a.wav"
        out[rel] = {k: v for k, v in row.items() if v not in (None, "")}
    return out


def beside(audio: Path) -> dict[str, Any]:
    """The metadata in ``<stem>.json`` or ``<name>.json`` next to ``audio`` ({} when none or
    not a JSON object)."""
    for cand in (audio.with_suffix(".json"), audio.with_name(audio.name + ".json")):
        if cand.is_file():
            try:
                got = json.loads(cand.read_text(encoding="utf-8"))
            except (ValueError, OSError):
                return {}
            return got if isinstance(got, dict) else {}
    return {}


def metadata_for(audio: Path, rel: str, manifest: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {**beside(audio), **manifest.get(rel, {})}
