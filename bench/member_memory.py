"""Peak memory of ``onsei run`` itself on one long member, with every default on and real models.

    python -m bench.member_memory 2 180    -> per member length (minutes): asr's and enhance's
                                              peak RSS in MB, wall, CPU and system seconds and
                                              page faults (minor + major), one JSON line each

Where bench/feed_memory.py runs a stage with models that answer at once, this runs the command a
user runs (``ONSEI_CONFIG=examples/offline.yaml onsei run --stages asr`` then ``enhance``) under
``/usr/bin/time -v``: Whisper base, Silero VAD, RNNoise, DNSMOS and the speaker encoder, with
their buffers. The member is a podcast's worst case for holding audio: speech one part in ten,
pink noise between (espeak-ng sentences, opus 48 kHz), packed by ``onsei pack-audio``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SR = 16000
UNIT = 60.0  # seconds: one sentence group, then pink noise for the rest of the unit
SENTENCES = [
    "The quick brown fox jumps over the lazy dog, and then it runs back into the forest.",
    "Speech data for training needs clean audio, accurate text, and a careful check.",
    "Every morning the baker opens the shop before the sun rises over the hills.",
    "A long recording can hold hours of talk, music, and quiet moments between them.",
    "The committee will meet again next week to discuss the budget for the new library.",
]
ROOT = Path(__file__).resolve().parents[1]


def _pink(n: int, seed: int) -> np.ndarray:
    """``n`` samples of pink (1/f power) noise, RMS about -35 dBFS."""
    spec = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    f = np.arange(spec.size, dtype=np.float64)
    f[0] = 1.0
    x = np.fft.irfft(spec / np.sqrt(f), n)
    return np.asarray(x / (np.sqrt(np.mean(x * x)) + 1e-12) * 0.018, dtype=np.float32)


def _block() -> np.ndarray:
    """Ten minutes at 16 kHz: per minute ~6 s of speech (one part in ten), pink noise after it."""
    from fixtures.speechgen import synth

    units = []
    for i in range(10):
        speech = synth(SENTENCES[i % len(SENTENCES)], voice="en-us", speed=150)[: int(6.5 * SR)]
        speech = speech / (np.abs(speech).max() + 1e-9) * 0.5
        unit = _pink(int(UNIT * SR), seed=i)
        unit[int(0.5 * SR): int(0.5 * SR) + speech.size] += speech
        units.append(unit)
    return np.asarray(np.clip(np.concatenate(units), -1, 1), dtype=np.float32)


def make(root: Path, minutes: float) -> Path:
    """A raw shard (``root/raw``) holding one ``minutes``-long opus member; returns its folder."""
    from fixtures.speechgen import wav_bytes

    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise RuntimeError("ffmpeg is not installed")
    src = root / "src"
    src.mkdir(parents=True)
    block = root / "block.wav"
    block.write_bytes(wav_bytes(_block(), SR))
    # the ten-minute block looped: ffmpeg streams it, so a 3-hour member is never held here
    subprocess.run([ffmpeg, "-nostdin", "-v", "error", "-stream_loop", "-1", "-i", str(block),
                    "-t", str(minutes * 60), "-ar", "48000", "-c:a", "libopus", "-b:a", "48k",
                    str(src / "long.opus")], check=True)
    block.unlink()
    raw = root / "raw"
    subprocess.run([_onsei(), "pack-audio", str(src), "--output", str(raw), "--no-progress"],
                   check=True, capture_output=True)
    shutil.rmtree(src)
    return raw


def _onsei() -> str:
    exe = Path(sys.executable).with_name("onsei")
    return str(exe) if exe.exists() else "onsei"


def run_stage(root: Path, stage: str, env: dict[str, str] | None = None,
              timeout: float = 7200) -> dict[str, float]:
    """``onsei run --stages STAGE`` on ``root/raw`` under ``/usr/bin/time -v``: peak MB, wall and
    CPU (user + system) seconds."""
    # every default on: no ONSEI_* setting and no thread cap inherited (the test suite sets
    # ONSEI_QUALITY_ANNOTATIONS=false and OMP_NUM_THREADS=1), only those given here
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith("ONSEI_") and k != "OMP_NUM_THREADS"}
    full = {**inherited, "ONSEI_CONFIG": str(ROOT / "examples" / "offline.yaml"), **(env or {})}
    out = subprocess.run(["/usr/bin/time", "-v", _onsei(), "run", "--input", str(root / "raw"),
                          "--output", str(root / "out"), "--range", "0-0", "--stages", stage],
                         env=full, capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"onsei run --stages {stage}: {out.stderr[-3000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", out.stderr)
    if peak is None or wall is None:
        raise RuntimeError(f"no /usr/bin/time -v report: {out.stderr[-2000:]}")
    h, m, s = wall.groups()
    user, system = (float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)",
                                                 out.stderr))
    faults = sum(int(x) for x in re.findall(r"(?:Major|Minor) \(.*\) page faults: (\d+)",
                                            out.stderr))
    return {"peak_mb": int(peak.group(1)) / 1024,
            "wall_s": int(h or 0) * 3600 + int(m) * 60 + float(s),
            "cpu_s": round(user + system, 1), "sys_s": round(system, 1), "faults": faults}


def measure(minutes: float, stages: tuple[str, ...] = ("asr", "enhance"),
            env: dict[str, str] | None = None) -> dict[str, dict[str, float]]:
    """Peak RSS of ``onsei run --stages S`` for each of ``stages`` in turn, each in a process of
    its own, on one fresh ``minutes``-long member (enhance reads asr's output)."""
    with tempfile.TemporaryDirectory(prefix="onsei-member-mem-") as d:
        root = Path(d)
        make(root, minutes)
        return {stage: run_stage(root, stage, env) for stage in stages}


def main(argv: list[str]) -> None:
    for minutes in [float(a) for a in argv]:
        print(json.dumps({"minutes": minutes, **measure(minutes)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
