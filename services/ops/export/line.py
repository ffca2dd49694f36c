"""One line of an exported training set: the tokens line's fields, plus the language and the
speaker labels (where the source has them: the voice within its file, and across the corpus).
Keys a newer writer added to the source line are kept and written after the known ones
(services/records.py's rules)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from services.records import Quality, Record


def _omitted() -> Any:
    return Field(default=None, exclude_if=lambda v: v is None)


class ExportLine(Record):
    """``codes`` is absent with ``--no-tokens``, where ``audio_tar`` / ``audio_member`` name
    the enhanced tar and its FLAC member instead."""

    id: str
    text: str = ""
    codes: dict[str, list[int]] | None = _omitted()
    duration_seconds: float = 0.0
    language: str | None = None
    speaker_id: str | None = _omitted()
    # the voice across the corpus (``onsei speakers``) and the segment's cosine to it (0-1)
    corpus_speaker_id: str | None = _omitted()
    corpus_speaker_confidence: float | None = _omitted()
    quality: Quality | None = _omitted()
    audio_tar: str | None = _omitted()
    audio_member: str | None = _omitted()
    # the text as spoken and what wrote it, the Japanese reading and accent, IPA (services/text)
    text_spoken: str | None = _omitted()
    text_spoken_by: str | None = _omitted()
    reading: str | None = _omitted()
    accent: str | None = _omitted()
    phonemes: str | None = _omitted()
    # where the input file came from and its licence (services/provenance; "unknown": no
    # metadata)
    origin: str | None = _omitted()  # the source URL or id ("source" is the input file here)
    licence: str | None = _omitted()


def leaf_paths(value: Any, prefix: str = "") -> set[str]:
    """The paths of ``value`` (a line as JSON data) that hold something: a non-null scalar or
    a non-empty list of scalars. A JSON loader that infers its schema from the first lines it
    reads needs each of them once there (services/ops/export/write.py)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out |= leaf_paths(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, list):
        if value and isinstance(value[0], (dict, list)):
            for v in value:
                out |= leaf_paths(v, prefix + "[]")
        elif value:
            out.add(prefix + "[]")
    elif value is not None:
        out.add(prefix)
    return out
