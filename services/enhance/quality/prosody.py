"""What a TTS trainer conditions on, per segment (docs/quality.md, prosody): pitch, speaking
rate, SNR, and how much of the segment is speech at all.

- ``speech_fraction``: share of 32 ms windows Silero VAD (the one inside faster-whisper, on
  onnxruntime; on a GPU its torch port, ``vad.py``) calls speech (probability >= 0.5), on the
  restored audio. Digital silence and
  steady tones score near 0: restoration makes both sound clean, so DNSMOS alone lets them pass.
- ``pitch``: f0 mean and standard deviation in Hz over voiced frames, from WORLD's DIO
  (``pyworld``, 10 ms frames, DIO's speed 4), on the restored audio. No StoneMask refinement:
  it doubled the cost, and the mean and spread over a segment measured as close without it
  (docs/quality.md).
- ``speaking_rate``: letters and digits of the transcript per second of speech (VAD seconds);
  Japanese in morae per second, from the reading ``pykakasi`` gives (kanji included; without
  the package, characters). The unit is written beside it.
- ``snr``: dB, on the input (before restoration): the segment's mean power over a noise floor
  taken as the mean power of its quietest 20 ms frames (the 10th percentile and below). Speech
  has pauses between words even inside an ASR segment; the noise is there in them too.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pykakasi

SR = 16000
VAD_WINDOW = 512  # Silero's window at 16 kHz (32 ms)
VAD_THRESHOLD = 0.5
F0_FLOOR, F0_CEIL = 60.0, 700.0
# f0 of speech (60-700 Hz) on the audio at 8 kHz: 2-3x less CPU than at 16 kHz for the same
# error on tones (0.09-0.15 %), so it fits the enhance stage's CPU budget
PITCH_SR = 8000
FRAME_MS = 10.0
DIO_SPEED = 4  # DIO on audio decimated 4x: 2x cheaper, same error vs Harvest (docs/quality.md)
SNR_FRAME = 320  # 20 ms
SNR_QUIET = 10.0  # percentile of frame power taken as the noise floor
SNR_MAX = 60.0  # above this the floor is digital silence or coding noise: reported as the cap
CHARS = "chars/s"
MORA = "mora/s"


@dataclass(frozen=True)
class Prosody:
    speech_fraction: float
    pitch_mean: float | None  # Hz; None: no voiced frame
    pitch_std: float | None
    speaking_rate: float | None  # None: no speech or no text
    speaking_rate_unit: str
    snr: float | None  # dB; None: too short or silent


def load_prosody() -> None:
    """Import and load what :func:`measure` needs, so a missing package fails the worker at
    start (pyworld and faster-whisper are in the ``enhance`` extra)."""
    import pyworld  # noqa: F401
    from faster_whisper.vad import get_vad_model

    get_vad_model()


def speech_windows(audio: np.ndarray) -> np.ndarray:
    """Which Silero VAD windows (32 ms) of ``audio`` (16 kHz) are at or above 0.5."""
    from faster_whisper.vad import get_vad_model

    if audio.size == 0:
        return np.zeros(0, bool)
    x = np.asarray(audio, np.float32)
    x = np.pad(x, (0, (-x.size) % VAD_WINDOW))
    return np.asarray(get_vad_model()(x)).reshape(-1) >= VAD_THRESHOLD


def speech_fraction(audio: np.ndarray) -> float:
    """Share of Silero VAD windows at or above 0.5 in ``audio`` (16 kHz)."""
    w = speech_windows(audio)
    return float(w.mean()) if w.size else 0.0


def pitch(audio: np.ndarray) -> tuple[float | None, float | None]:
    """(mean, std) of f0 in Hz over the voiced frames of ``audio`` (16 kHz), or (None, None)."""
    import pyworld
    import soxr

    x = np.asarray(audio, np.float64)
    if x.size < SR // 10 or not np.any(x):
        return None, None
    x = soxr.resample(x, SR, PITCH_SR)
    f0, _ = pyworld.dio(x, PITCH_SR, f0_floor=F0_FLOOR, f0_ceil=F0_CEIL, frame_period=FRAME_MS,
                        speed=DIO_SPEED)
    voiced = f0[f0 > 0]
    if voiced.size < 3:
        return None, None
    return float(voiced.mean()), float(voiced.std())


def snr_db(audio: np.ndarray) -> float | None:
    """Mean power over the quietest frames' power, in dB (capped at ``SNR_MAX``)."""
    x = np.asarray(audio, np.float64)
    n = x.size // SNR_FRAME
    if n < 10:
        return None
    power = np.mean(x[:n * SNR_FRAME].reshape(n, SNR_FRAME) ** 2, axis=1)
    total = float(power.mean())
    if total <= 0:
        return None
    floor = float(power[power <= np.percentile(power, SNR_QUIET)].mean())
    if floor <= total * 10 ** (-SNR_MAX / 10):
        return SNR_MAX
    return float(min(SNR_MAX, 10 * np.log10(max(total - floor, floor * 1e-3) / floor)))


def text_units(text: str, language: str | None) -> tuple[int, str]:
    """How many units ``text`` says, and their name: morae for Japanese (when a reading can be
    had), else letters and digits."""
    if language == "ja":
        morae = _morae(text)
        if morae is not None:
            return morae, MORA
    return sum(1 for c in text if unicodedata.category(c)[0] in "LN"), CHARS


_SMALL = set("ゃゅょぁぃぅぇぉゎャュョァィゥェォヮ")  # a small kana joins the mora before it


def _morae(text: str) -> int | None:
    try:
        import pykakasi
    except ImportError:
        return None
    kana = "".join(item["hira"] for item in _kakasi(pykakasi).convert(text))
    return sum(1 for c in kana if c not in _SMALL
               and unicodedata.name(c, "").startswith(("HIRAGANA", "KATAKANA")))


_KAKASI: pykakasi.kakasi | None = None


def _kakasi(mod: ModuleType) -> pykakasi.kakasi:
    global _KAKASI
    if _KAKASI is None:
        _KAKASI = mod.kakasi()
    return _KAKASI


def measure(after: np.ndarray, before: np.ndarray, text: str, language: str | None,
            frac: float | None = None) -> Prosody:
    """All of it for one segment: ``after`` the restored audio, ``before`` the input, both
    16 kHz; ``frac``: its speech fraction when already measured (a batch on the device)."""
    if frac is None:
        frac = speech_fraction(after)
    mean, std = pitch(after)
    units, unit = text_units(text, language)
    speech_s = frac * after.size / SR
    rate = units / speech_s if units and speech_s >= 0.25 else None
    return Prosody(frac, mean, std, rate, unit, snr_db(before))
