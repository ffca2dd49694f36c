"""The bad-input catalogue: hostile and odd members, built cheaply, each with what must happen.

``build_members()`` returns :class:`Case` objects in shard order; ``write_catalogue_shard()``
writes them into one tar with good speech members between them, so each test can check both
"this member got its reason" and "the rest of the shard was done".
"""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from fixtures.speechgen import synth
from tests.reliability.flacgen import silent_flac

GOOD_TEXT = "the quick brown fox jumps over the lazy dog near the river bank"


@dataclass
class Case:
    name: str  # what the catalogue calls it
    member: str  # tar member name (may be hostile)
    data: bytes = b""
    kind: str = "file"  # file, symlink, hardlink, fifo
    target: str = ""  # link target
    # the per-member outcome: an error reason prefix, or "audio" (decodes; ASR decides)
    reason: str = "audio"
    key: str | None = None  # the key its ASR line carries (None: derived from member)


def _enc(audio: np.ndarray, sr: int, fmt: str = "WAV", subtype: str = "PCM_16") -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, sr, format=fmt, subtype=subtype)
    return buf.getvalue()


def speech(rate: int = 16000) -> np.ndarray:
    return synth(GOOD_TEXT, voice="en", rate=rate)


def music(seconds: float = 6.0, sr: int = 16000) -> np.ndarray:
    """Chords of harmonic tones with note envelopes: tonal, rhythmic, not speech."""
    t = np.arange(int(seconds * sr)) / sr
    out = np.zeros_like(t)
    chords = [(261.6, 329.6, 392.0), (220.0, 261.6, 329.6), (174.6, 220.0, 261.6),
              (196.0, 246.9, 293.7)]
    beat = 0.5
    for i in range(int(seconds / beat)):
        seg = (t >= i * beat) & (t < (i + 1) * beat)
        env = np.exp(-3.0 * (t[seg] - i * beat))
        for f in chords[(i // 2) % len(chords)]:
            for h in (1, 2, 3):
                out[seg] += env * np.sin(2 * np.pi * f * h * t[seg]) / (h * 6)
    return (0.8 * out / np.abs(out).max()).astype(np.float32)


def build_members(sp16: np.ndarray, long_seconds: int = 3 * 3600) -> list[Case]:
    """``sp16``: a few seconds of speech at 16 kHz (the other rates are resampled from it)."""
    import soxr

    rng = np.random.default_rng(0)
    flac = _enc(sp16, 16000, "FLAC")
    sp6 = np.stack([sp16 * (0.5 + 0.1 * c) for c in range(6)], axis=1)
    return [
        Case("truncated flac", "trunc.flac", flac[: len(flac) // 2]),
        Case("garbage bytes named .wav", "garbage.wav", rng.bytes(50_000), reason="undecodable"),
        Case("zero-byte file", "zero.wav", b"", reason="empty"),
        Case("non-audio member only", "notes.txt", b"just some notes\n", reason="no_audio"),
        Case("parent traversal", "../evil.wav", _enc(sp16[:16000], 16000),
             reason="unsafe_member:parent_traversal"),
        Case("absolute path", "/tmp/onsei-abs.wav", _enc(sp16[:16000], 16000),
             reason="unsafe_member:absolute_path"),
        Case("symlink", "link.wav", kind="symlink", target="/etc/passwd",
             reason="unsafe_member:link"),
        Case("hard link", "hard.wav", kind="hardlink", target="good0.wav",
             reason="unsafe_member:link"),
        Case("fifo", "pipe.wav", kind="fifo", reason="unsafe_member:device"),
        Case("0.1 s of audio", "tiny.wav", _enc(sp16[:1600], 16000), reason="too_short"),
        Case("3 hours of audio", "long.flac", silent_flac(long_seconds),
             reason="too_long"),
        Case("8 kHz", "rate8k.wav", _enc(soxr.resample(sp16, 16000, 8000), 8000)),
        Case("6 channels", "ch6.wav", _enc(sp6, 16000)),
        Case("96 kHz", "rate96k.flac", _enc(soxr.resample(sp16, 16000, 96000), 96000, "FLAC",
                                            "PCM_24")),
        Case("8-bit", "bits8.wav", _enc(sp16, 16000, "WAV", "PCM_U8")),
        Case("silence", "silence.wav", _enc(np.zeros(16000 * 5, np.float32), 16000)),
        Case("noise", "noise.wav",
             _enc((0.3 * rng.standard_normal(16000 * 5)).astype(np.float32), 16000)),
        Case("music", "music.wav", _enc(music(), 16000)),
        Case("malformed .json sidecar", "badjson.json", b'{"speaker": "a", "lang": ', ),
        Case("audio of the malformed sidecar", "badjson.wav", _enc(sp16, 16000)),
        Case("huge .json sidecar", "hugejson.json",
             json.dumps({"pad": "x" * (2 * 1024 * 1024)}).encode(),
             reason="member_too_large"),
        Case("audio of the huge sidecar", "hugejson.wav", _enc(sp16, 16000)),
        Case("duplicate key (second copy)", "good0.wav", _enc(sp16, 16000),
             reason="duplicate_key"),
        Case("non-UTF-8 name", "caf\udce9.wav", _enc(sp16[:16000], 16000),
             reason="unsafe_member:non_utf8_name"),
        Case("control characters in the name", "tab\tnl\nesc\x1b[2J.wav",
             _enc(sp16[:16000], 16000), reason="unsafe_member:control_character_in_name"),
    ]


GOOD_KEYS = ("good0", "good1", "good2")


def write_catalogue_shard(path: Path, cases: list[Case], good: bytes) -> Path:
    """good0, then every case, with good1 in the middle and good2 at the end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mid = len(cases) // 2
    order: list[Case] = [Case("good", "good0.wav", good)]
    order += cases[:mid] + [Case("good", "good1.wav", good)] + cases[mid:]
    order.append(Case("good", "good2.wav", good))
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tf:
        for c in order:
            info = tarfile.TarInfo(c.member)
            info.mode = 0o644
            if c.kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, c.target
            elif c.kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, c.target
            elif c.kind == "fifo":
                info.type = tarfile.FIFOTYPE
            else:
                info.size = len(c.data)
            tf.addfile(info, io.BytesIO(c.data) if c.kind == "file" else None)
    return path


def tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    return info.tobuf(format=tarfile.GNU_FORMAT)


def write_sparse_huge_member_shard(path: Path, huge: int, good: bytes) -> Path:
    """A real member of ``huge`` bytes (a sparse hole on disk: costs nothing) between two good
    ones. The reader must skip it by its header size, without reading it."""
    block = tarfile.BLOCKSIZE
    with open(path, "wb") as f:
        for name, data, size in (("a.wav", good, len(good)), ("huge.wav", None, huge),
                                 ("b.wav", good, len(good))):
            f.write(tar_header(name, size))
            if data is None:
                f.seek(f.tell() + size)
            else:
                f.write(data)
            pad = (-size) % block
            f.seek(f.tell() + pad) if data is None else f.write(b"\0" * pad)
        f.write(b"\0" * 2 * block)
    return path
