"""Audio decoding of real ffmpeg-made files in many formats, layouts and rates; typed errors."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from common.shards import audio as audio_mod
from common.shards.audio import (
    AudioError,
    decode_audio,
    flac_bytes,
    probe_seconds,
    read_audio_bytes,
    resample,
)

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")

TONE = 440.0
AMP = 0.5
SECONDS = 1.5

# name -> (file name, ffmpeg output args, input rate, channels)
CASES: dict[str, tuple[str, list[str], int, int]] = {
    "wav": ("a.wav", [], 16000, 1),
    "flac": ("a.flac", [], 22050, 1),
    "mp3": ("a.mp3", ["-c:a", "libmp3lame", "-b:a", "64k"], 44100, 1),
    "opus": ("a.opus", ["-c:a", "libopus", "-b:a", "48k"], 48000, 1),
    "ogg_vorbis": ("a.ogg", ["-c:a", "libvorbis"], 44100, 1),
    "m4a": ("a.m4a", ["-c:a", "aac", "-b:a", "96k"], 44100, 1),
    "webm": ("a.webm", ["-c:a", "libopus"], 48000, 1),
    "stereo": ("st.wav", [], 44100, 2),
    "8khz": ("r8.wav", [], 8000, 1),
    "48khz": ("r48.flac", [], 48000, 1),
    "96khz": ("r96.wav", [], 96000, 1),
    "8bit": ("u8.wav", ["-c:a", "pcm_u8"], 22050, 1),
    "6ch": ("six.wav", [], 48000, 6),
}


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", *args], check=True)


def _tone(out: Path, rate: int, channels: int, extra: list[str], seconds: float = SECONDS) -> None:
    # every channel carries the tone, so any sane downmix keeps its level
    _ffmpeg("-f", "lavfi", "-i", f"sine=f={TONE:g}:d={seconds}:sample_rate={rate}",
            "-af", f"volume={AMP * 8:g}", "-ac", str(channels), *extra, str(out))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("audio")
    out = {}
    for name, (fname, extra, rate, ch) in CASES.items():
        _tone(d / fname, rate, ch, extra)
        out[name] = d / fname
    return out


def _peak_hz(x: np.ndarray, sr: int) -> float:
    spec = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return float(np.fft.rfftfreq(x.size, 1 / sr)[spec.argmax()])


@pytest.mark.parametrize("case", list(CASES))
def test_decode_formats(files: dict[str, Path], case: str) -> None:
    data = files[case].read_bytes()
    a = decode_audio(data, 16000)
    assert a.dtype == np.float32 and a.ndim == 1 and a.flags["C_CONTIGUOUS"]
    # lossy codecs add priming / padding samples; allow a little
    assert abs(a.size / 16000 - SECONDS) < 0.08, a.size
    assert abs(_peak_hz(a, 16000) - TONE) < 5
    mid = a[a.size // 4: 3 * a.size // 4]
    peak = float(np.abs(mid).max())
    assert 0.8 * AMP < peak <= 1.0, peak  # downmix and 8-bit keep the level, nothing clips
    assert abs(probe_seconds(data) - SECONDS) < 0.1


def test_decode_other_rates_and_stereo_content(tmp_path: Path, files: dict[str, Path]) -> None:
    a = decode_audio(files["96khz"].read_bytes(), 48000)
    assert abs(a.size - SECONDS * 48000) < 10 and abs(_peak_hz(a, 48000) - TONE) < 3
    a = decode_audio(files["8khz"].read_bytes(), 24000)
    assert abs(a.size - SECONDS * 24000) < 10 and abs(_peak_hz(a, 24000) - TONE) < 3
    # left 440 Hz, right 1000 Hz: both are in the mono mix
    st = tmp_path / "lr.flac"
    _ffmpeg("-f", "lavfi", "-i", "sine=f=440:d=1:sample_rate=44100", "-f", "lavfi",
            "-i", "sine=f=1000:d=1:sample_rate=44100", "-filter_complex", "amerge=inputs=2",
            str(st))
    m = decode_audio(st.read_bytes(), 16000)
    spec = np.abs(np.fft.rfft(m))
    freqs = np.fft.rfftfreq(m.size, 1 / 16000)
    top2 = sorted(freqs[np.argsort(spec)[-2:]].round())
    assert top2 == [440.0, 1000.0]


def test_empty_garbage_and_no_audio(tmp_path: Path) -> None:
    cases = {
        b"": "empty",
        b"definitely not audio " * 100: "undecodable",
        np.random.default_rng(1).bytes(50_000): "undecodable",
    }
    img = tmp_path / "x.png"
    _ffmpeg("-f", "lavfi", "-i", "color=c=red:s=32x32", "-frames:v", "1", str(img))
    cases[img.read_bytes()] = "no_audio_stream"
    for data, reason in cases.items():
        with pytest.raises(AudioError) as ei:
            decode_audio(data, 16000)
        assert ei.value.reason == reason
    with pytest.raises(AudioError) as ei:
        read_audio_bytes(b"nope" * 10)
    assert ei.value.reason == "undecodable"


def test_too_short_and_too_long(tmp_path: Path, files: dict[str, Path]) -> None:
    short = tmp_path / "short.wav"
    _tone(short, 16000, 1, [], seconds=0.1)
    with pytest.raises(AudioError) as ei:
        decode_audio(short.read_bytes(), 16000, min_seconds=0.3)
    assert ei.value.reason == "too_short"
    assert decode_audio(short.read_bytes(), 16000, min_seconds=0.05).size == 1600
    # declared by the header: rejected before decoding
    with pytest.raises(AudioError, match="declares") as ei:
        decode_audio(files["mp3"].read_bytes(), 16000, max_seconds=1.0)
    assert ei.value.reason == "too_long"
    assert decode_audio(files["mp3"].read_bytes(), 16000, max_seconds=2.0).size > 0


def test_too_long_without_header_stops_early(tmp_path: Path, monkeypatch) -> None:
    """No declared duration: decoding stops right after the limit, not at the end of the file."""
    long = tmp_path / "long.flac"
    _tone(long, 16000, 1, [], seconds=30)
    monkeypatch.setattr(audio_mod, "_declared_seconds", lambda c, s: None)
    seen = []
    orig = audio_mod._Sink.frame
    monkeypatch.setattr(audio_mod._Sink, "frame",
                        lambda self, fr: (seen.append(fr.samples), orig(self, fr))[1])
    with pytest.raises(AudioError) as ei:
        decode_audio(long.read_bytes(), 16000, max_seconds=2.0)
    assert ei.value.reason == "too_long"
    assert 2 * 16000 <= sum(seen) < 4 * 16000


def test_truncated_file_keeps_what_decoded(files: dict[str, Path]) -> None:
    data = files["mp3"].read_bytes()
    a = decode_audio(data[: len(data) // 2], 16000)
    assert 0.4 * SECONDS * 16000 < a.size < 0.7 * SECONDS * 16000


def test_flac_round_trip_and_resample(tmp_path: Path) -> None:
    t = np.arange(24000) / 24000
    x = (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    y, sr = read_audio_bytes(flac_bytes(x, 24000))
    assert sr == 24000 and y.dtype == np.float32 and np.abs(y - x).max() < 1e-4
    # clipped, not wrapped
    z, sr = read_audio_bytes(flac_bytes(np.full(100, 2.0, np.float32), 16000))
    assert sr == 16000 and z.min() > 0.99
    assert decode_audio(flac_bytes(x, 24000), 24000).size == x.size
    r = resample(x, 24000, 16000)
    assert r.dtype == np.float32 and r.size == 16000
    assert resample(x, 24000, 24000) is x


def test_truncation_is_noted_when_the_header_says_more(tmp_path: Path) -> None:
    t = np.arange(16000 * 4) / 16000
    x = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    whole = flac_bytes(x, 16000)
    notes: list[str] = []
    a = decode_audio(whole[: len(whole) // 2], 16000, notes=notes)
    assert 1.0 < a.size / 16000 < 3.0
    assert len(notes) == 1 and notes[0].startswith("truncated:") and notes[0].endswith("/4.00s")
    clean: list[str] = []
    decode_audio(whole, 16000, notes=clean)
    assert clean == []  # a whole file gets no note


def _frame_by_frame(data: bytes, rate: int) -> np.ndarray:
    """Every frame through the format conversion to packed mono float, then soxr's stream one
    frame at a time: how ``decode_chunks`` once did it, the reference for the samples."""
    import av
    import soxr

    out = []
    with av.open(io.BytesIO(data)) as c:
        stream = c.streams.audio[0]
        conv = av.AudioResampler(format="flt", layout="mono", rate=stream.rate)
        rs = soxr.ResampleStream(stream.rate, rate, 1, dtype="float32", quality="HQ")
        for fr in c.decode(stream):
            out += [rs.resample_chunk(o.to_ndarray().reshape(-1)) for o in conv.resample(fr)]
        out += [rs.resample_chunk(o.to_ndarray().reshape(-1)) for o in conv.resample(None)]
        out.append(rs.resample_chunk(np.zeros(0, np.float32), last=True))
    return np.concatenate(out)


@pytest.mark.parametrize("name", ["mp3", "opus", "ogg_vorbis", "m4a", "stereo", "flac"])
def test_frames_taken_as_they_are_and_resampled_a_second_at_a_time_give_the_same_samples(
        files: dict[str, Path], name: str) -> None:
    """Mono float frames skip the format conversion and soxr gets about a second at a time:
    the very samples of the frame-by-frame path, at the file's rate and at others."""
    data = files[name].read_bytes()
    for rate in (16000, 44100, 48000):
        got = np.concatenate(list(audio_mod.decode_chunks(data, rate)))
        assert np.array_equal(got, _frame_by_frame(data, rate))
