"""A local copy of a test set, in the layouts such sets come in: a folder of audio files, each
with its transcript beside it (``<stem>.txt``, ``<stem>.lab``, ``<stem>.normalized.txt``, or
``<stem>.json`` with a ``text``), or listed in ``metadata.csv`` (LJSpeech: ``id|text|...``) or
a ``*.tsv`` / ``transcripts.txt`` (``id<TAB>text`` or ``id text``, LibriSpeech's
``*.trans.txt``). The set's name is its folder's name."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.shards.audio import AUDIO_EXTENSIONS, AudioError, decode_audio

RATE = 16000


class TestSetError(ValueError):
    """A test set folder that cannot be used (named)."""


@dataclass
class Utterance:
    name: str  # relative path
    audio: np.ndarray | None  # 16 kHz mono; None when it would not decode
    text: str


def _listed(root: Path) -> dict[str, str]:
    """Stem -> transcript from the list files of ``root`` (any depth)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("metadata.csv")):
        for row in csv.reader(p.read_text(encoding="utf-8").splitlines(), delimiter="|"):
            if len(row) >= 2:
                out[row[0].strip()] = row[-1].strip() or row[1].strip()
    for p in sorted([*root.rglob("*.tsv"), *root.rglob("*.trans.txt"),
                     *root.rglob("transcripts.txt")]):
        for line in p.read_text(encoding="utf-8").splitlines():
            head, sep, tail = line.partition("\t") if "\t" in line else line.partition(" ")
            if sep and tail.strip():
                out[head.strip()] = tail.strip()
    return out


def _beside(audio: Path) -> str | None:
    for suffix in (".txt", ".lab", ".normalized.txt"):
        p = audio.with_suffix(suffix)
        if p.is_file():
            return p.read_text(encoding="utf-8").strip()
    p = audio.with_suffix(".json")
    if p.is_file():
        try:
            got = json.loads(p.read_text(encoding="utf-8"))
        except ValueError:
            return None
        if isinstance(got, dict) and isinstance(got.get("text"), str):
            return str(got["text"])
    return None


def utterances(root: Path) -> Iterator[Utterance]:
    """Every audio file under ``root`` with its transcript ("" when none is found: it is
    still matched by its audio)."""
    if not root.is_dir():
        raise TestSetError(f"--exclude-test-sets {root}: not a folder")
    listed = _listed(root)
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix.lstrip(".").lower() not in AUDIO_EXTENSIONS:
            continue
        text = _beside(p)
        if text is None:
            text = listed.get(p.stem, "")
        try:
            audio: np.ndarray | None = decode_audio(p.read_bytes(), RATE)
        except AudioError:
            audio = None
        yield Utterance(p.relative_to(root).as_posix(), audio, text)
