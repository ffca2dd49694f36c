"""Audio in and out: decode anything ffmpeg decodes (PyAV) to mono float32, resample (soxr), FLAC.

Errors are typed: :class:`AudioError` carries a short machine-readable ``reason``
(``empty``, ``undecodable``, ``no_audio_stream``, ``too_short``, ``too_long``) that stages
record as ``error:<reason>``.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

AUDIO_EXTENSIONS = frozenset(
    {"flac", "wav", "mp3", "ogg", "opus", "m4a", "aac", "webm", "mka", "mp4", "wma", "aiff",
     "aif", "au", "caf", "amr", "3gp", "spx", "ac3", "mkv", "mov"}
)


class AudioError(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


def decode_audio(
    data: bytes,
    sample_rate: int = 16000,
    *,
    max_seconds: float | None = None,
    min_seconds: float | None = None,
) -> np.ndarray:
    """Decode ``data`` to mono float32 at ``sample_rate``.

    Decoding stops (and raises ``too_long``) as soon as ``max_seconds`` is passed, so a 3-hour
    file over the limit costs nothing like 3 hours of decoding memory.
    """
    import av  # PyAV: ships its own ffmpeg, a faster-whisper dependency already

    if not data:
        raise AudioError("empty", "0 bytes")
    try:
        container = av.open(io.BytesIO(data), mode="r", metadata_errors="ignore")
    except (av.error.FFmpegError, ValueError, IndexError) as e:  # type: ignore[attr-defined]
        raise AudioError("undecodable", _short(e)) from e
    chunks: list[np.ndarray] = []
    total = 0
    limit = None if max_seconds is None else int(max_seconds * sample_rate) + 1
    try:
        with container:
            if not container.streams.audio:
                raise AudioError("no_audio_stream", "the file holds no audio stream")
            stream = container.streams.audio[0]
            stream.thread_type = "AUTO"
            resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    arr = out.to_ndarray().reshape(-1)
                    chunks.append(arr)
                    total += arr.size
                if limit is not None and total > limit:
                    raise AudioError("too_long", f"longer than {max_seconds:g} s")
            for out in resampler.resample(None):
                arr = out.to_ndarray().reshape(-1)
                chunks.append(arr)
                total += arr.size
    except AudioError:
        raise
    except (av.error.FFmpegError, ValueError, RuntimeError, OSError) as e:  # type: ignore[attr-defined]
        if total == 0:
            raise AudioError("undecodable", _short(e)) from e
        # A truncated file: keep what decoded cleanly.
    if total == 0:
        raise AudioError("empty", "no audio samples decoded")
    audio = np.concatenate(chunks).astype(np.float32, copy=False)
    if limit is not None and audio.size > limit:
        raise AudioError("too_long", f"longer than {max_seconds:g} s")
    if min_seconds is not None and audio.size < min_seconds * sample_rate:
        raise AudioError("too_short", f"{audio.size / sample_rate:.3f} s < {min_seconds:g} s")
    return audio


def resample(audio: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """High-quality resampling (soxr); a no-op when the rates match."""
    if sr_in == sr_out:
        return audio.astype(np.float32, copy=False)
    import soxr

    return soxr.resample(audio, sr_in, sr_out, quality="HQ").astype(np.float32, copy=False)


def flac_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(audio, -1.0, 1.0), sample_rate, format="FLAC", subtype="PCM_16")
    return buf.getvalue()


def write_flac(path: str | Path, audio: np.ndarray, sample_rate: int) -> None:
    Path(path).write_bytes(flac_bytes(audio, sample_rate))


def read_audio_bytes(data: bytes) -> tuple[np.ndarray, int]:
    """FLAC/WAV/OGG bytes -> (mono float32, rate), via soundfile (fast path for our own files)."""
    import soundfile as sf

    try:
        audio, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception as e:  # soundfile raises LibsndfileError / RuntimeError
        raise AudioError("undecodable", _short(e)) from e
    if audio.size == 0:
        raise AudioError("empty", "no audio samples")
    return audio.mean(axis=1).astype(np.float32), int(sr)


def _short(e: BaseException) -> str:
    return (str(e) or type(e).__name__).splitlines()[0][:200]
