"""Audio in and out: decode anything ffmpeg decodes (PyAV) to mono float32, resample (soxr), FLAC.

Errors are typed: :class:`AudioError` carries a short machine-readable ``reason``
(``empty``, ``undecodable``, ``no_audio_stream``, ``too_short``, ``too_long``) that stages
record as ``error:<reason>``.

Decoding: PyAV (its own ffmpeg, already a faster-whisper dependency) decodes and downmixes
(ffmpeg's channel matrix: 5.1 to mono keeps the level, LFE handled) at the file's own rate; soxr
then resamples in a stream, so memory stays at the *output* rate and a too-long file stops early.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from common.shards.slice import MemberSlice
from common.shards.spool import Spool

log = logging.getLogger(__name__)

# sample formats whose mono frames are float32 samples as they are (planar or packed)
_FLOAT_FORMATS = frozenset({"flt", "fltp"})

AUDIO_EXTENSIONS = frozenset(
    {"flac", "wav", "mp3", "ogg", "opus", "m4a", "aac", "webm", "mka", "mp4", "wma", "aiff",
     "aif", "au", "caf", "amr", "3gp", "spx", "ac3", "mkv", "mov"}
)
# A declared duration (container header) is trusted to reject a file as too long up front only
# beyond this slack: estimates from bitrate (VBR mp3 without a Xing header) can be a little off.
_DECLARED_SLACK = 1.05


class AudioError(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


def _av() -> Any:
    import av  # lazy: importing onsei.common must stay cheap

    return av


Source = bytes | str | Path | MemberSlice  # a member in memory, a file, or one left in its tar


@contextmanager
def _open(src: Source) -> Iterator[Any]:
    """The container over ``src``, closed (with a member's own file handle) on exit."""
    av = _av()
    handle = src.open() if isinstance(src, MemberSlice) else None
    try:
        if handle is not None:
            file: Any = handle
        elif isinstance(src, (bytes, bytearray, memoryview)):
            file = io.BytesIO(src)
        else:
            file = str(src)
        try:
            container = av.open(file, mode="r", metadata_errors="ignore")
        except (av.FFmpegError, ValueError, IndexError, UnicodeDecodeError) as e:
            raise AudioError("undecodable", _short(e)) from e
        with container:
            yield container
    finally:
        if handle is not None:
            handle.close()


def _declared_seconds(container: Any, stream: Any) -> float | None:
    """Duration from headers (no decoding), or None when the container does not say."""
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return float(container.duration) / 1_000_000  # AV_TIME_BASE
    return None


def probe_seconds(src: Source) -> float | None:
    """Declared duration of the first audio stream, reading headers only (cheap); None if the
    file does not declare one. Raises :class:`AudioError` for non-audio / unreadable input."""
    if isinstance(src, (bytes, bytearray)) and not src:
        raise AudioError("empty", "0 bytes")
    with _open(src) as container:
        if not container.streams.audio:
            raise AudioError("no_audio_stream", "the file holds no audio stream")
        stream = container.streams.audio[0]
        if not stream.rate:  # headers told nothing (e.g. junk named .flac): try one frame
            av = _av()
            try:
                next(container.decode(stream))
            except (av.FFmpegError, ValueError, RuntimeError, OSError, StopIteration) as e:
                raise AudioError("undecodable", _short(e)) from e
        return _declared_seconds(container, stream)


class _Sink:
    """Collects mono float32 chunks at the output rate; raises ``too_long`` past the limit.

    Per-frame work is kept small (a frame is 20-60 ms, an hour of opus is 180,000 of them): a
    mono float frame is taken as it is (the format conversion to packed float would only copy
    it), and the samples are resampled about a second at a time (soxr's stream gives the same
    samples however its input is split)."""

    def __init__(self, sample_rate: int, max_seconds: float | None) -> None:
        self.sample_rate = sample_rate
        self.max_seconds = max_seconds
        self.limit = None if max_seconds is None else int(max_seconds * sample_rate) + 1
        self.chunks: list[np.ndarray] = []
        self.total = 0
        self.waiting = 0  # samples in ``chunks``
        self._av_resampler: Any = None  # None: the frames are mono float already
        self._soxr: Any = None
        self._fmt: tuple[str, str, int] | None = None
        self._raw: list[np.ndarray] = []  # at the file's rate, not yet resampled
        self._raw_size = 0
        self._raw_batch = 0

    def frame(self, frame: Any) -> None:
        fmt = (frame.format.name, frame.layout.name, frame.sample_rate)
        if fmt != self._fmt:  # first frame, or the stream changed rate / layout mid-way
            self.flush()
            import soxr

            av = _av()
            direct = frame.format.name in _FLOAT_FORMATS and frame.layout.nb_channels == 1
            self._av_resampler = None if direct else av.AudioResampler(
                format="flt", layout="mono", rate=frame.sample_rate)
            self._soxr = (None if frame.sample_rate == self.sample_rate else
                          soxr.ResampleStream(frame.sample_rate, self.sample_rate, 1,
                                              dtype="float32", quality="HQ"))
            self._raw_batch = frame.sample_rate  # resampled a second at a time
            self._fmt = fmt
        if self._av_resampler is None:  # the plane's samples (``to_ndarray`` would stack it)
            self._push(np.frombuffer(frame.planes[0], np.float32, frame.samples))
            return
        for out in self._av_resampler.resample(frame):
            self._push(out.to_ndarray().reshape(-1))

    def _push(self, mono: np.ndarray, last: bool = False) -> None:
        if self._soxr is not None:
            if mono.size:
                self._raw.append(mono)
                self._raw_size += mono.size
            if self._raw_size < self._raw_batch and not last:
                return
            raw = self._raw[0] if len(self._raw) == 1 else np.concatenate(
                self._raw or [np.zeros(0, np.float32)])
            self._raw, self._raw_size = [], 0
            mono = self._soxr.resample_chunk(raw, last=last)
        if mono.size:
            self.chunks.append(mono)
            self.total += mono.size
            self.waiting += mono.size
        if self.limit is not None and self.total > self.limit:
            raise AudioError("too_long", f"longer than {self.max_seconds:g} s")

    def flush(self) -> None:
        if self._fmt is None:
            return
        if self._av_resampler is not None:
            for out in self._av_resampler.resample(None):
                self._push(out.to_ndarray().reshape(-1))
        if self._soxr is not None:
            self._push(np.zeros(0, dtype=np.float32), last=True)
        self._av_resampler = self._soxr = self._fmt = None

    def take(self, least: int = 0) -> list[np.ndarray]:
        """The samples collected since the last call, joined, once there are at least
        ``least`` (a frame is 20-60 ms: per-frame handling costs more than one copy)."""
        if not self.waiting or self.waiting < least:
            return []
        out = self.chunks[0] if len(self.chunks) == 1 else np.concatenate(self.chunks)
        self.chunks, self.waiting = [], 0
        return [out]


def decode_chunks(
    data: bytes | MemberSlice,
    sample_rate: int = 16000,
    *,
    max_seconds: float | None = None,
    info: dict[str, Any] | None = None,
) -> Iterator[np.ndarray]:
    """Decode ``data`` to mono float32 chunks at ``sample_rate``, as they come: a caller that
    processes in windows holds only what it keeps (memory bounded by its window, not by the
    file's length). ``info["declared"]``: the declared duration (None when not declared), set
    before the first chunk. Raises :class:`AudioError` as :func:`decode_audio` does; ``too_long``
    of a file that declares no duration comes after the chunks up to the limit."""
    if not len(data):
        raise AudioError("empty", "0 bytes")
    av = _av()
    sink = _Sink(sample_rate, max_seconds)
    with _open(data) as container:
        if not container.streams.audio:
            raise AudioError("no_audio_stream", "the file holds no audio stream")
        stream = container.streams.audio[0]
        declared = _declared_seconds(container, stream)
        if info is not None:
            info["declared"] = declared
        if (max_seconds is not None and declared is not None
                and declared > max_seconds * _DECLARED_SLACK):
            raise AudioError("too_long", f"declares {declared:.1f} s > {max_seconds:g} s")
        try:
            for frame in container.decode(stream):
                sink.frame(frame)
                yield from sink.take(sample_rate)  # about a second at a time
            sink.flush()
        except AudioError:
            raise
        except (av.FFmpegError, ValueError, RuntimeError, OSError) as e:
            if sink.total == 0:
                raise AudioError("undecodable", _short(e)) from e
            log.warning("audio stream cut short after %.2f s: %s", sink.total / sample_rate,
                        _short(e))
            sink.flush()
        yield from sink.take()


def decode_audio(
    data: bytes | MemberSlice,
    sample_rate: int = 16000,
    *,
    max_seconds: float | None = None,
    min_seconds: float | None = None,
    notes: list[str] | None = None,
    spool: tuple[str | Path, float] | None = None,
) -> np.ndarray:
    """Decode ``data`` (any ffmpeg-decodable bytes) to mono float32 at ``sample_rate``.

    Too long is found out without decoding it all: first from the declared duration, else
    decoding stops as soon as ``max_seconds`` is passed. A file cut short keeps what decoded;
    when ``notes`` is given, ``truncated:<decoded>/<declared>s`` is appended to it so the caller
    can record why the audio is shorter than the file claims. Chunks are copied into one buffer
    sized from the declared duration: the file is held once, not twice (list + joined copy).
    ``spool=(directory, seconds)``: a file longer than ``seconds`` goes to a scratch file in
    ``directory`` instead, mapped back (common/shards/spool.py: a slice is read when taken).
    """
    info: dict[str, Any] = {}
    buf: _Buffer | Spool = _Buffer()
    try:
        for chunk in decode_chunks(data, sample_rate, max_seconds=max_seconds, info=info):
            buf = _placed(buf, info.get("declared"), sample_rate, spool)
            buf.append(chunk)
        audio = buf.audio() if isinstance(buf, _Buffer) else buf.samples()
    finally:
        if isinstance(buf, Spool):
            buf.close()
    declared = info.get("declared")
    if audio.size == 0:
        raise AudioError("empty", "no audio samples decoded")
    got = audio.size / sample_rate
    if notes is not None and declared is not None and got < declared * 0.98 - 0.1:
        notes.append(f"truncated:{got:.2f}/{declared:.2f}s")
    if min_seconds is not None and audio.size < min_seconds * sample_rate:
        raise AudioError("too_short", f"{audio.size / sample_rate:.3f} s < {min_seconds:g} s")
    return audio


def _placed(buf: _Buffer | Spool, declared: float | None, sample_rate: int,
            spool: tuple[str | Path, float] | None) -> _Buffer | Spool:
    """Where the next chunk goes: ``buf``, or a spool once the file is known to be longer than
    the spool's seconds (declared, or decoded so far: then what was decoded moves there)."""
    if isinstance(buf, Spool):
        return buf
    limit = None if spool is None else spool[1] * sample_rate
    if limit is not None and ((declared or 0) * sample_rate > limit or buf.size > limit):
        assert spool is not None
        moved = Spool(spool[0])
        if buf.size:
            moved.append(buf.audio())
        return moved
    if buf.data is None and declared:
        buf.reserve(int(declared * sample_rate) + sample_rate)
    return buf


class _Buffer:
    """Growing float32 buffer: chunks are copied in place, grown by half when it fills up."""

    def __init__(self) -> None:
        self.data: np.ndarray | None = None
        self.size = 0

    def reserve(self, n: int) -> None:
        self.data = np.empty(max(n, 1), dtype=np.float32)

    def append(self, chunk: np.ndarray) -> None:
        end = self.size + chunk.size
        if self.data is None or end > self.data.size:
            grown = np.empty(max(end, (self.data.size * 3) // 2 if self.data is not None else end),
                             dtype=np.float32)
            if self.data is not None:
                grown[:self.size] = self.data[:self.size]
            self.data = grown
        self.data[self.size:end] = chunk
        self.size = end

    def audio(self) -> np.ndarray:
        if self.data is None:
            return np.zeros(0, dtype=np.float32)
        if self.data.size - self.size > self.data.size // 8:  # far too big: keep only the audio
            return self.data[:self.size].copy()
        return self.data[:self.size]


def resample(audio: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """High-quality resampling (soxr); a no-op when the rates match."""
    if sr_in == sr_out:
        return audio.astype(np.float32, copy=False)
    import soxr

    return np.asarray(soxr.resample(audio, sr_in, sr_out, quality="HQ"), dtype=np.float32)


def flac_bytes(audio: np.ndarray, sample_rate: int, subtype: str = "PCM_16") -> bytes:
    """Mono (or [T, C]) float audio -> FLAC bytes; samples are clipped to [-1, 1] first."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(audio, -1.0, 1.0), sample_rate, format="FLAC", subtype=subtype)
    return buf.getvalue()


def read_audio_bytes(data: bytes) -> tuple[np.ndarray, int]:
    """FLAC/WAV/OGG bytes -> (mono float32, rate), via soundfile (fast path for our own files)."""
    import soundfile as sf

    if not data:
        raise AudioError("empty", "0 bytes")
    try:
        audio, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception as e:  # soundfile raises LibsndfileError / RuntimeError
        raise AudioError("undecodable", _short(e)) from e
    if audio.size == 0:
        raise AudioError("empty", "no audio samples")
    return audio.mean(axis=1).astype(np.float32), int(sr)



def _short(e: BaseException) -> str:
    return (str(e) or type(e).__name__).splitlines()[0][:200]
