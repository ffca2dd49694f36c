"""Test speech from espeak-ng, shared by the tests and the benches (bench ships, tests do not).

    synth("hello world", voice="en") -> float32 mono at 16 kHz
    wav_bytes(audio, 16000)          -> WAV file bytes (PCM 16)
    make_shard(path, {"a": {"wav": b"..."}}) -> a WebDataset tar

Japanese needs kana-only text with spaces between words (espeak-ng reads no kanji).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import numpy as np


def have_espeak() -> bool:
    return shutil.which("espeak-ng") is not None


def synth(text: str, voice: str = "en", rate: int = 16000, speed: int = 160) -> np.ndarray:
    """Speak ``text`` with espeak-ng voice ``voice``; mono float32 at ``rate``."""
    import soundfile as sf

    exe = shutil.which("espeak-ng")
    if exe is None:
        raise RuntimeError("espeak-ng is not installed (apt-get install espeak-ng)")
    wav = subprocess.run([exe, "-v", voice, "-s", str(speed), "--stdout", text],
                         check=True, capture_output=True).stdout
    audio, sr = sf.read(io.BytesIO(wav), dtype="float32", always_2d=True)
    audio = audio.mean(axis=1)
    if sr != rate:
        import soxr

        audio = soxr.resample(audio, sr, rate)
    return np.asarray(audio, dtype=np.float32)


def silence(seconds: float, rate: int = 16000) -> np.ndarray:
    return np.zeros(int(seconds * rate), dtype=np.float32)


def concat(parts: list[np.ndarray], pause: float = 0.0, rate: int = 16000) -> np.ndarray:
    """Join ``parts`` with ``pause`` seconds of silence between them."""
    out: list[np.ndarray] = []
    for i, p in enumerate(parts):
        if i and pause > 0:
            out.append(silence(pause, rate))
        out.append(p.astype(np.float32))
    return np.concatenate(out) if out else silence(0, rate)


def wav_bytes(audio: np.ndarray, sr: int = 16000) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(audio, -1.0, 1.0), sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def make_tar(path: str | Path, members: list[tuple[str, bytes]]) -> Path:
    """A tar of exactly these members, in order (repeated and dotted names allowed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def make_shard(path: str | Path, samples: dict[str, dict[str, bytes]]) -> Path:
    """Write a WebDataset tar: members ``{key}.{ext}`` in the given order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for key, files in samples.items():
            for ext, data in files.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                info.mode = 0o644
                tf.addfile(info, io.BytesIO(data))
    return path


def si_snr(ref: np.ndarray, est: np.ndarray) -> float:
    """Scale-invariant SNR (dB) of ``est`` against the clean ``ref``."""
    a = float(np.dot(ref, est) / np.dot(ref, ref))
    noise = est - a * ref
    return float(10 * np.log10(np.sum((a * ref) ** 2) / np.sum(noise ** 2)))


def noisy_speech(snr_db: float, seconds: float = 14.0) -> tuple[np.ndarray, np.ndarray]:
    phrase = synth("she sells sea shells by the sea shore, and the shells she sells are "
                   "surely sea shells", "en", rate=48000)
    clean = np.tile(phrase, int(np.ceil(seconds * 48000 / phrase.size)))[: int(seconds * 48000)]
    clean = (0.5 * clean / np.abs(clean).max()).astype(np.float32)
    noise = np.random.default_rng(0).standard_normal(clean.size).astype(np.float32)
    noise *= np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2) / 10 ** (snr_db / 10))
    return clean, clean + noise


def add_noise(clean: np.ndarray, snr_db: float, seed: int = 0) -> np.ndarray:
    """``clean`` plus white noise at ``snr_db`` (seeded)."""
    noise = np.random.default_rng(seed).standard_normal(clean.size).astype(np.float32)
    noise *= np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2) / 10 ** (snr_db / 10))
    return (clean + noise).astype(np.float32)
