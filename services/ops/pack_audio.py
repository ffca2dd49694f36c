"""``onsei pack-audio DIR --output URL``: pack a folder tree of audio files into input shards.

Each audio file becomes one sample: ``{key}.{ext}`` (the bytes as they are) and ``{key}.json``
(the original relative path, size, declared duration). Keys come from relative paths made safe
for WebDataset (only ``[A-Za-z0-9_-]``, no dots: a reader splits a key at its first dot;
``/`` becomes ``__``) and unique (``-2``, ``-3`` on collision). Shards are named by the shard
pattern, written to scratch under a temp name and published whole through the store
(``put_file``), so ``s3://`` works like a local folder and a reader never sees half a shard.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from common.queue.messages import MAX_SHARD_ID
from common.settings import Settings
from common.shards.audio import AUDIO_EXTENSIONS, AudioError, probe_seconds
from common.shards.tar import ShardWriter
from common.storage import open_store

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_MAX_KEY = 150
# tar bytes per sample beyond the audio itself: pax + ustar headers, padding, the .json sidecar
_SAMPLE_OVERHEAD = 4 * 512 + 1024


def parse_size(text: str) -> int:
    """``1GB`` -> 10**9, ``512MiB`` -> 2**29, ``2000`` -> 2000."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (e.g. 1GB, 500MB, 2GiB)")
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return n


def safe_key(rel: str) -> str:
    """``a b/Ünïcode.take2.wav`` -> ``a_b__Unicode_take2``: WebDataset-safe, readable."""
    stem = rel.rsplit(".", 1)[0] if "." in rel.rsplit("/", 1)[-1] else rel
    ascii_ = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    digest = hashlib.sha1(rel.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    parts = []
    for orig, part in zip(stem.split("/"), ascii_.split("/"), strict=True):
        part = _UNSAFE.sub("_", part).strip("_")
        if not part and orig.strip("_ "):  # e.g. a name wholly in kana: a hash keeps it apart
            part = f"h{digest}"
        if part:
            parts.append(part)
    key = "__".join(parts) or f"h{digest}"
    if len(key) > _MAX_KEY:
        key = f"{key[:_MAX_KEY - 9]}-{digest}"
    return key


class KeyMaker:
    """Unique keys in the order files come: the first keeps its key, the next get -2, -3."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, rel: str) -> str:
        base = safe_key(rel)
        key, n = base, 1
        while key in self.used:
            n += 1
            key = f"{base}-{n}"
        self.used.add(key)
        return key


@dataclass
class AudioFile:
    path: Path
    rel: str
    ext: str
    size: int
    seconds: float | None
    key: str = ""


@dataclass
class PackSummary:
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    unknown_duration: int = 0
    shards: list[str] = field(default_factory=list)
    with_metadata: int = 0  # files packed with provenance metadata (beside them or manifest)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    skipped_examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, rel: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        ex = self.skipped_examples.setdefault(reason, [])
        if len(ex) < 3:
            ex.append(rel)

    @property
    def hours(self) -> float:
        return self.seconds / 3600


def scan(root: Path, settings: Settings, summary: PackSummary,
         tick: Callable[[], None] = lambda: None) -> list[AudioFile]:
    """Audio files under ``root`` in a stable order, their durations probed from headers."""
    found: list[AudioFile] = []
    for dirpath, dirs, names in os.walk(root):
        for d in dirs:
            if d.startswith("."):
                summary.skip("hidden", (Path(dirpath) / d).relative_to(root).as_posix() + "/")
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            tick()
            if name.startswith("."):  # .DS_Store, AppleDouble ._x.wav: never audio
                summary.skip("hidden", rel)
                continue
            if ext not in AUDIO_EXTENSIONS or not path.is_file():
                summary.skip("not_audio", rel)
                continue
            size = path.stat().st_size
            if size == 0:
                summary.skip("empty", rel)
                continue
            if size > settings.max_member_bytes:
                summary.skip("too_large", rel)
                continue
            try:
                seconds = probe_seconds(path)
            except AudioError as e:
                summary.skip(e.reason, rel)
                continue
            found.append(AudioFile(path, rel, ext, size, seconds))
    keys = KeyMaker()
    for f in found:
        f.key = keys(f.rel)
    return found


def plan_shards(files: list[AudioFile], shard_size: int) -> list[list[AudioFile]]:
    """Greedy: a shard closes before the file that would push it past ``shard_size``."""
    shards: list[list[AudioFile]] = []
    cur: list[AudioFile] = []
    cur_bytes = 0
    for f in files:
        need = f.size + _SAMPLE_OVERHEAD
        if cur and cur_bytes + need > shard_size:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append(f)
        cur_bytes += need
    if cur:
        shards.append(cur)
    return shards


def sidecar(f: AudioFile, provenance: dict[str, Any] | None = None) -> bytes:
    meta: dict[str, Any] = {"source_path": f.rel, "source_bytes": f.size,
                            "duration_seconds": f.seconds}
    if provenance:  # as given: asr reads it (services/provenance/record.py)
        meta["provenance"] = provenance
    return json.dumps(meta, ensure_ascii=False).encode()


def pack(root: Path, output_url: str, settings: Settings, *, shard_size: int = 10**9,
         start_id: int = 0, overwrite: bool = False, progress: bool = True,
         manifest: dict[str, dict[str, Any]] | None = None) -> PackSummary:
    """Pack ``root`` into shards ``start_id, start_id+1, ...`` under ``output_url``;
    ``manifest``: metadata by relative path (services/provenance/metadata.py)."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from services.provenance.metadata import metadata_for

    summary = PackSummary()
    store = open_store(output_url, settings)
    cols = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*cols, disable=not progress, transient=True) as bar:
        t_scan = bar.add_task("scanning", total=None)
        files = scan(root, settings, summary, tick=lambda: bar.advance(t_scan))
        bar.remove_task(t_scan)
        plan = plan_shards(files, shard_size)
        if start_id + len(plan) - 1 > MAX_SHARD_ID:
            raise click.ClickException(f"--start-id {start_id} leaves no room for {len(plan)} "
                                       f"shards: shard ids go up to {MAX_SHARD_ID}")
        names = [settings.shard_name(start_id + i) for i in range(len(plan))]
        existing = [n for n in names if store.exists(n)]
        if existing and not overwrite:
            raise click.ClickException(
                f"{len(existing)} shard(s) already exist under {output_url} "
                f"(first: {existing[0]}); pass --start-id past them or --overwrite")
        t_pack = bar.add_task("packing", total=sum(f.size for f in files))
        scratch = Path(settings.scratch_dir)
        scratch.mkdir(parents=True, exist_ok=True)
        tmpdir = Path(tempfile.mkdtemp(prefix="onsei-pack-", dir=scratch))
        try:
            for name, members in zip(names, plan, strict=True):
                local = tmpdir / Path(name).name
                with ShardWriter(local) as w:
                    for f in members:
                        meta = metadata_for(f.path, f.rel, manifest or {})
                        summary.with_metadata += bool(meta)
                        w.write_files(f.key, {f.ext: f.path, "json": sidecar(f, meta)})
                        bar.advance(t_pack, f.size)
                store.put_file(local, name)
                local.unlink()
                summary.shards.append(name)
                summary.files += len(members)
                summary.bytes += sum(f.size for f in members)
                for f in members:
                    if f.seconds is None:
                        summary.unknown_duration += 1
                    else:
                        summary.seconds += f.seconds
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return summary


def print_summary(summary: PackSummary, output_url: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from common.display import markup

    t = Table(title=f"packed into {markup(output_url)}", show_header=False)
    t.add_row("files", f"{summary.files:,}")
    t.add_row("audio hours", f"{summary.hours:.3f}" + (
        f" (+{summary.unknown_duration} files without a declared duration)"
        if summary.unknown_duration else ""))
    t.add_row("bytes", f"{summary.bytes / 1e6:,.1f} MB")
    t.add_row("with provenance metadata", f"{summary.with_metadata:,} files")
    span = f"{summary.shards[0]} .. {summary.shards[-1]}" if summary.shards else "-"
    t.add_row("shards", markup(f"{len(summary.shards)} ({span})"))
    for reason, n in sorted(summary.skipped.items()):  # file names: text, never markup
        ex = ", ".join(summary.skipped_examples.get(reason, []))
        t.add_row(markup(f"skipped: {reason}"), markup(f"{n} (e.g. {ex})"))
    Console().print(t)


@click.command("pack-audio")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--output", "-o", "output_url", required=True,
              help="where the shards go: a folder, file:// or s3:// URL")
@click.option("--shard-size", default="1GB", show_default=True,
              help="target shard size (e.g. 500MB, 2GiB); a larger file gets a shard of its own")
@click.option("--start-id", default=0, show_default=True, type=click.IntRange(0, MAX_SHARD_ID),
              help="id of the first shard (to add to an existing set)")
@click.option("--overwrite", is_flag=True, help="replace shards that already exist")
@click.option("--no-progress", is_flag=True, help="no progress bar")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="per-file source/licence/owner/date: JSON lines or CSV with "
              "a path column (docs/provenance.md)")
def pack_audio(directory: Path, output_url: str, shard_size: str, start_id: int,
               overwrite: bool, no_progress: bool, manifest: Path | None) -> None:
    """Pack a folder tree of audio files into WebDataset input shards."""
    try:
        size = parse_size(shard_size)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--shard-size") from e
    from services.provenance.metadata import ManifestError, load_manifest
    from services.stages import PipelineSettings

    try:
        rows = load_manifest(manifest) if manifest is not None else None
    except (ManifestError, OSError, UnicodeDecodeError) as e:
        raise click.BadParameter(str(e), param_hint="--manifest") from e
    summary = pack(directory, output_url, PipelineSettings(), shard_size=size, start_id=start_id,
                   overwrite=overwrite, progress=not no_progress, manifest=rows)
    print_summary(summary, output_url)
    if summary.files == 0:
        raise click.ClickException(f"no audio files found under {directory}")
