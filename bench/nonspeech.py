"""Music and sound effects with no speech in them, from Debian's game packages (free licences),
for the music and non-speech measures (bench/wild/music.py, the music tests).

    fetch("pushover-data")  -> the package's files, extracted under the cache (apt-get download
                               + dpkg-deb -x, never installed, never committed)
    music_tracks()          -> [(name, 16 kHz audio)]: the three music packages' tracks
    effects()               -> [(name, 16 kHz audio)]: applause, game effects (no voice lines)

The cache is ``ONSEI_BENCH_DEBS`` (default ``~/.cache/onsei/debs``); a package fetched once is
read from there. :class:`FetchError` names the package and apt's reason (no network, no apt
lists: run ``apt-get update``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SR = 16000
MUSIC = {  # package: where its tracks lie (extracted tree)
    "pushover-data": "usr/share/pushover/themes",
    "singularity-music": "usr/share/games/singularity/music",
    "hyperrogue-music": "usr/share/hyperrogue/music",
}
EFFECTS = {  # package: effect files with no voice in them
    "frozen-bubble-data": ("usr/share/games/frozen-bubble/snd",
                           ("applause", "cancel", "destroy_group", "hurry", "launch",
                            "malus", "menu_change", "newroot", "pause", "rebound", "stick",
                            "typewriter", "snore")),
    "hyperrogue-music": ("usr/share/hyperrogue/sounds", ()),  # () : all of them
}


class FetchError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("ONSEI_BENCH_DEBS", Path.home() / ".cache/onsei/debs"))


def fetch(package: str) -> Path:
    """The extracted tree of ``package`` (downloaded and unpacked once into the cache)."""
    root = cache_dir() / package
    if (root / ".done").is_file():
        return root
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        got = subprocess.run(["apt-get", "download", package], cwd=tmp, check=False,
                             capture_output=True, text=True)
        debs = sorted(Path(tmp).glob(f"{package}_*.deb"))
        if got.returncode != 0 or not debs:
            raise FetchError(f"apt-get download {package} failed: "
                             f"{(got.stderr or got.stdout).strip()[-300:]}")
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True)
    (root / ".done").write_text("ok\n")
    return root


def _read(path: Path, max_seconds: float | None = None) -> np.ndarray | None:
    """The file at 16 kHz, decoding no more than ``max_seconds``; None when undecodable."""
    from common.shards.audio import AudioError, decode_chunks

    parts, n = [], 0
    try:
        for chunk in decode_chunks(path.read_bytes(), SR):
            parts.append(chunk)
            n += chunk.size
            if max_seconds is not None and n >= max_seconds * SR:
                break
    except AudioError:  # a few hyperrogue tracks are in a format ffmpeg's ogg refuses
        return None
    a = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    return a[:int(max_seconds * SR)] if max_seconds is not None else a


def music_tracks(max_seconds: float | None = None) -> list[tuple[str, np.ndarray]]:
    """Every decodable track of :data:`MUSIC`, cut to ``max_seconds`` when given."""
    out = []
    for package, where in MUSIC.items():
        for p in sorted((fetch(package) / where).rglob("*.ogg")):
            a = _read(p, max_seconds)
            if a is not None and a.size:
                out.append((f"{package}/{p.stem}", a))
    return out


def effects() -> list[tuple[str, np.ndarray]]:
    out = []
    for package, (where, names) in EFFECTS.items():
        for p in sorted((fetch(package) / where).glob("*.ogg")):
            if names and p.stem not in names:
                continue
            a = _read(p)
            if a is not None and a.size:
                out.append((f"{package}/{p.stem}", a))
    return out
