"""``--with-audio``: each split's lines again as WebDataset tars, the segment's enhanced FLAC
beside its line (``webdataset/<split>/shard-NNNNN.tar``, members ``<key>.flac`` and
``<key>.json``), so ``webdataset.WebDataset`` and ``datasets.load_dataset("webdataset",
data_dir=<export>/webdataset)`` load the audio with the text.

A WebDataset reader takes a member's key up to the first dot of its basename, and corpus ids
hold dots, ``@`` and ``-`` as their source keys do: the key is the line's position in its
split, and the JSON (the export line, the same fields) carries the id. The FLAC comes from the
enhanced tar of the shard the id names (its member ``<id within the shard>.flac``); the tars of
one shard are fetched once per run of lines from it (lines are written in shard order).
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from common.settings import Settings
from common.shards.tar import ShardWriter
from common.storage import NotFound, Store
from services.ops.export.split import SPLITS
from services.ops.export.write import Written
from services.records import local_name, shard_of
from services.stages import PIPELINE

AUDIO_DIR = "webdataset"
SHARD_SEGMENTS = 1000  # segments per WebDataset tar: ~300 MB at 10 s each (FLAC ~30 KB/s)


class AudioMissing(ValueError):
    """A line's FLAC is not in the enhanced tar its id names."""


@dataclass
class _Source:
    """The enhanced tar of one shard, fetched locally, members looked up by name."""

    shard: int
    path: Path
    tar: tarfile.TarFile
    members: dict[str, tarfile.TarInfo] = field(default_factory=dict)

    def flac(self, key: str) -> bytes | None:
        info = self.members.get(f"{key}.flac")
        f = self.tar.extractfile(info) if info is not None else None
        return f.read() if f is not None else None

    def close(self) -> None:
        self.tar.close()
        self.path.unlink(missing_ok=True)


def _open(store: Store, settings: Settings, shard: int, workdir: Path) -> _Source:
    key = PIPELINE.output_key("enhance", settings, shard)
    path = workdir / f"{shard}.audio.tar"
    try:
        store.get_file(key, path)
    except NotFound:
        raise AudioMissing(f"{store.child_url(key)} missing: the audio of shard {shard}") \
            from None
    tar = tarfile.open(path)  # noqa: SIM115 - closed by _Source.close
    return _Source(shard, path, tar, {m.name: m for m in tar.getmembers() if m.isfile()})


def write_audio(root: Path, written: Written, store: Store, settings: Settings,
                workdir: Path, shard_segments: int = SHARD_SEGMENTS) -> list[str]:
    """Write the WebDataset tars of every split's parts under ``root``; their names (relative
    to ``root``) in order. Raises AudioMissing naming the first line whose FLAC is absent."""
    names: list[str] = []
    for split in SPLITS:
        names += _write_split(root, split, written.files[split], store, settings, workdir,
                              shard_segments)
    return names


def _write_split(root: Path, split: str, parts: list[str], store: Store, settings: Settings,
                 workdir: Path, shard_segments: int) -> list[str]:
    names: list[str] = []
    out: ShardWriter | None = None
    src: _Source | None = None
    n = 0
    try:
        for part in parts:
            with open(root / part, "rb") as f:
                for raw in f:
                    if not raw.strip():
                        continue
                    line_id = json.loads(raw)["id"]
                    shard = shard_of(line_id)
                    if shard is None:
                        raise AudioMissing(f"{line_id}: names no shard")
                    if src is None or src.shard != shard:
                        if src is not None:
                            src.close()
                            src = None
                        src = _open(store, settings, shard, workdir)
                    audio = src.flac(local_name(line_id))
                    if audio is None:
                        raise AudioMissing(f"{line_id}: no {local_name(line_id)}.flac in "
                                           f"the enhanced tar of shard {shard}")
                    if out is None or n % shard_segments == 0:
                        if out is not None:
                            out.close()
                        name = f"{AUDIO_DIR}/{split}/shard-{len(names):05d}.tar"
                        (root / name).parent.mkdir(parents=True, exist_ok=True)
                        out = ShardWriter(root / name, mtime=0)
                        names.append(name)
                    out.write(f"{n:09d}", {"flac": audio, "json": raw.rstrip(b"\n")})
                    n += 1
        if out is not None:
            out.close()
            out = None
    finally:
        if out is not None:
            out.abort()
        if src is not None:
            src.close()
    return names
