"""Copies and look-alikes of real speech, to measure the duplicate matcher (docs/dedup.md).

Originals: pocketsphinx-testdata's LibriVox lines (one reader) and card names (another
speaker), fillets-ng-data's elk-level lines (two voices), with their reference texts; and,
where pyannote-audio's sample is found (bench/known_speakers.py: ``ONSEI_PYANNOTE_SAMPLE``), the
lines of its two-speaker telephone call, cut at the times of its transcript (``sample.stm``).
Copies of one original: re-encoded (mp3 64 kbit/s, opus 24 kbit/s), telephone band
(300-3400 Hz, 8 kHz), gain changed (-12 dB, +6 dB), noise at 20 dB SNR, 0.5 s trimmed or
padded, both boundaries moved, and those combined. Look-alikes: the same words by other
speakers (espeak-ng voices) and other words by the same speaker.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from bench.speechgen import add_noise, synth
from common.shards.audio import decode_audio, resample

SR = 16000
SPHINX = Path("/usr/share/pocketsphinx/test/data")
FILLETS = Path("/usr/share/games/fillets-ng")
OTHER_VOICES = ("en-us", "en+f3", "en-gb-scotland", "en+m7")


@dataclass
class Clip:
    name: str
    audio: np.ndarray  # 16 kHz mono
    text: str
    speaker: str


def _texts(path: Path) -> dict[str, str]:
    out = {}
    for ln in path.read_text().splitlines():
        m = re.match(r"(.*)\((\S+)\)\s*$", ln)
        if m:
            out[m.group(2)] = " ".join(w for w in m.group(1).split() if w not in ("<s>", "</s>"))
    return out


def _fillets_texts() -> dict[str, str]:
    src = FILLETS / "script" / "elk" / "dialogs_en.lua"
    if not src.is_file():
        return {}
    return dict(re.findall(r'dialogId\("([^"]+)",\s*"[^"]*",\s*"([^"]*)"\)', src.read_text()))


def originals(min_seconds: float = 1.0) -> list[Clip]:
    """Every real clip found (none when the Debian packages are missing)."""
    clips: list[Clip] = []
    lib = _texts(SPHINX / "librivox" / "transcription") if (SPHINX / "librivox").is_dir() else {}
    for p in sorted((SPHINX / "librivox").glob("*.wav")):
        if p.stem in lib:
            clips.append(Clip(f"librivox/{p.stem}", decode_audio(p.read_bytes(), SR),
                              lib[p.stem], "librivox"))
    cards = _texts(SPHINX / "cards" / "cards.transcription") if (SPHINX / "cards").is_dir() else {}
    for p in sorted((SPHINX / "cards").glob("*.wav")):
        if p.stem in cards:
            clips.append(Clip(f"cards/{p.stem}", decode_audio(p.read_bytes(), SR),
                              cards[p.stem], "cards"))
    ft = _fillets_texts()
    for p in sorted((FILLETS / "sound" / "elk" / "en").glob("deu-*.ogg")):
        if p.stem in ft:
            clips.append(Clip(f"fillets/{p.stem}", decode_audio(p.read_bytes(), SR),
                              ft[p.stem], f"fillets-{p.stem.split('-')[1]}"))
    clips += _pyannote_lines()
    return [c for c in clips if c.audio.size >= min_seconds * SR]


def _pyannote_lines() -> list[Clip]:
    from bench.known_speakers import pyannote_dir

    d = pyannote_dir()
    if d is None or not (d / "sample.stm").is_file():
        return []
    audio = decode_audio((d / "sample.wav").read_bytes(), SR)
    out = []
    for i, ln in enumerate((d / "sample.stm").read_text().splitlines()):
        f = ln.split(maxsplit=5)  # file, channel, speaker, start, end, text
        if len(f) == 6:
            a, b = int(float(f[3]) * SR), int(float(f[4]) * SR)
            out.append(Clip(f"pyannote/{i:02d}", audio[a:b], f[5], f"pyannote-{f[2]}"))
    return out


def _ffmpeg(audio: np.ndarray, args: list[str], ext: str) -> np.ndarray:
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise RuntimeError("ffmpeg is not installed")
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "in.wav", Path(d) / f"out.{ext}"
        sf.write(src, audio, SR)
        subprocess.run([exe, "-v", "error", "-y", "-i", str(src), *args, str(dst)], check=True)
        return decode_audio(dst.read_bytes(), SR)


def mp3(a: np.ndarray) -> np.ndarray:
    return _ffmpeg(a, ["-c:a", "libmp3lame", "-b:a", "64k"], "mp3")


def opus(a: np.ndarray) -> np.ndarray:
    return _ffmpeg(a, ["-c:a", "libopus", "-b:a", "24k"], "ogg")


def telephone(a: np.ndarray) -> np.ndarray:
    x = resample(a, SR, 8000)
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(x.size, 1 / 8000)
    spec[(f < 300) | (f > 3400)] = 0  # a brick-wall telephone channel
    return resample(np.fft.irfft(spec, x.size).astype(np.float32), 8000, SR)


def _gain(db: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: np.clip(a * 10 ** (db / 20), -1, 1).astype(np.float32)


def _noise(a: np.ndarray) -> np.ndarray:
    return add_noise(a, 20.0, seed=a.size)


def _trim(s: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: a[int(s * SR):]


def _trim_end(s: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: a[: a.size - int(s * SR)]


def _pad(s: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: np.concatenate([np.zeros(int(s * SR), np.float32), a,
                                     np.zeros(int(s * SR), np.float32)])


def _shifted(a: np.ndarray) -> np.ndarray:
    # boundaries moved as another VAD would: 0.3 s later at the start, 0.25 s more at the end
    # (room tone at -50 dB stands in for the audio past the original end)
    tail = add_noise(np.zeros(int(0.25 * SR), np.float32) + 1e-3, 0.0, seed=1) * 3e-3
    return np.concatenate([a[int(0.3 * SR):], tail.astype(np.float32)])


def _chain(*fs: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    def run(a: np.ndarray) -> np.ndarray:
        for f in fs:
            a = f(a)
        return a
    return run


TRANSFORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mp3_64k": mp3,
    "opus_24k": opus,
    "telephone_8k": telephone,
    "gain_-12dB": _gain(-12),
    "gain_+6dB": _gain(6),
    "noise_20dB": _noise,
    "trim_0.5s": _trim(0.5),
    "trim_end_0.5s": _trim_end(0.5),
    "pad_0.5s": _pad(0.5),
    "boundaries_moved": _shifted,
    "phone+mp3+noise": _chain(telephone, mp3, _noise),
    "opus+trim+gain": _chain(opus, _trim(0.3), _gain(-6)),
}


def trimmed_text(text: str, name: str) -> str:
    """The transcript a copy would get when audio was cut off: a word less at that end (the
    matcher must not rely on identical text)."""
    words = text.split()
    if len(words) > 3 and ("trim_0" in name or "boundaries" in name or "+trim" in name):
        return " ".join(words[1:])
    if len(words) > 3 and "trim_end" in name:
        return " ".join(words[:-1])
    return text


def other_speakers(text: str, voices: tuple[str, ...] = OTHER_VOICES) -> list[Clip]:
    """``text`` spoken by espeak-ng voices (same words, other speakers)."""
    return [Clip(f"espeak/{v}", synth(text, v), text, f"espeak-{v}") for v in voices]
