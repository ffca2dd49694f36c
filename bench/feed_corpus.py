"""A realistic raw shard for the feed bench: minutes-long files of real recorded speech (the
LibriVox clips of pocketsphinx-testdata, espeak-ng when absent) over a low noise floor, encoded
by ffmpeg in mixed codecs and rates (opus 48 kHz, mp3 44.1 kHz, flac 16 kHz, wav 24 kHz, ...),
as a crawled corpus holds them.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SR = 16000
# (extension, ffmpeg codec arguments, sample rate): one per file, in turn
CODECS: list[tuple[str, list[str], int]] = [
    ("opus", ["-c:a", "libopus", "-b:a", "48k"], 48000),
    ("mp3", ["-c:a", "libmp3lame", "-b:a", "96k"], 44100),
    ("flac", ["-c:a", "flac"], 16000),
    ("wav", ["-c:a", "pcm_s16le"], 24000),
    ("mp3", ["-c:a", "libmp3lame", "-b:a", "64k"], 22050),
    ("opus", ["-c:a", "libopus", "-b:a", "32k"], 48000),
    ("flac", ["-c:a", "flac"], 44100),
    ("wav", ["-c:a", "pcm_s16le"], 16000),
]


def speech_track(seconds: float, seed: int) -> np.ndarray:
    """``seconds`` of speech at 16 kHz: recorded clips with 0.3-2 s pauses, noise floor -60 dB."""
    from fixtures.longform import make_longform, real_english, real_longform

    clips = real_english()
    lf = real_longform(clips, seconds, seed=seed) if clips else make_longform("en", seconds, 1,
                                                                             seed=seed)
    x = lf.audio[: int(seconds * SR)].astype(np.float32)
    x += np.random.default_rng(seed).normal(0, 1e-3, x.size).astype(np.float32)
    return x


def encode(audio: np.ndarray, ext: str, codec_args: list[str], rate: int) -> bytes:
    """16 kHz float32 -> file bytes in ``ext`` at ``rate`` (ffmpeg)."""
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise RuntimeError("ffmpeg is not installed")
    with tempfile.TemporaryDirectory(prefix="onsei-feed-") as d:
        out = Path(d) / f"x.{ext}"
        subprocess.run([exe, "-v", "error", "-f", "f32le", "-ar", str(SR), "-ac", "1", "-i",
                        "pipe:0", "-ar", str(rate), *codec_args, str(out)],
                       input=np.clip(audio, -1, 1).astype("<f4").tobytes(), check=True)
        return out.read_bytes()


def make_mix(path: Path, files: int, seconds: float) -> float:
    """Write a raw shard of ``files`` members of ``seconds`` each; returns the audio seconds."""
    from fixtures.speechgen import make_shard

    members: dict[str, dict[str, bytes]] = {}
    for i in range(files):
        ext, args, rate = CODECS[i % len(CODECS)]
        members[f"f{i:03d}"] = {ext: encode(speech_track(seconds, i), ext, args, rate),
                                "json": b'{"source": "feed-bench"}'}
    make_shard(path, members)
    return files * seconds
