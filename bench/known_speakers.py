"""Recordings with known speakers, to choose and check the ``multi_speaker`` threshold.

Sources (all optional; a caller skips what is missing):
- fillets-ng-data (Debian): the "elk" level's dialog lines, tagged per line by speaker in the file
  name (``deu-l-*``: one voice, ``deu-p-*``: another);
- pocketsphinx-testdata (Debian): LibriVox lines of one reader, and "cards" of another speaker;
- pyannote-audio's wheel: ``sample.wav`` (two speakers) with reference turns ``sample.rttm``;
  point ``ONSEI_PYANNOTE_SAMPLE`` at the directory holding both (``pip download pyannote.audio
  --no-deps`` and unzip ``pyannote/audio/sample/``), or have pyannote.audio installed.

``cases()`` returns labelled 16 kHz clips: single lines, two lines of the same speaker joined,
and two lines of different speakers joined (with a 0.3 s pause, like an ASR segment spanning a
turn change), plus the pyannote sample's single-speaker turns and windows across turn changes.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.shards.audio import decode_audio

SR = 16000
FILLETS = Path("/usr/share/games/fillets-ng/sound/elk/en")
SPHINX = Path("/usr/share/pocketsphinx/test/data")


@dataclass
class Case:
    name: str
    audio: np.ndarray
    speakers: int
    source: str


def _load(p: Path) -> np.ndarray:
    return decode_audio(p.read_bytes(), SR)


def fillets_lines(min_seconds: float = 1.4) -> dict[str, list[np.ndarray]]:
    out: dict[str, list[np.ndarray]] = {}
    for tag in ("l", "p"):
        clips = [_load(p) for p in sorted(FILLETS.glob(f"deu-{tag}-*.ogg"))]
        out[f"fillets-{tag}"] = [c for c in clips if c.size >= min_seconds * SR]
    return out if all(out.values()) else {}


def sphinx_lines() -> dict[str, list[np.ndarray]]:
    libri = sorted((SPHINX / "librivox").glob("*.wav"))
    cards = sorted((SPHINX / "cards").glob("*.wav"))
    if not libri or not cards:
        return {}
    return {"librivox": [_load(p) for p in libri], "cards": [_load(p) for p in cards]}


def sphinx_texts() -> dict[str, list[str]]:
    """The reference transcripts of :func:`sphinx_lines`, in the same order."""
    out = {}
    for voice, name in (("librivox", "librivox/transcription"),
                        ("cards", "cards/cards.transcription")):
        lines = (SPHINX / name).read_text().splitlines()
        out[voice] = [" ".join(w for w in ln.split("(")[0].split() if w not in ("<s>", "</s>"))
                      for ln in lines if ln.strip()]
    return out


PYANNOTE_CACHE = Path.home() / ".cache/onsei/corpora/pyannote-sample"


def fetch_pyannote(dest: Path = PYANNOTE_CACHE) -> Path | None:
    """The sample out of pyannote.audio's wheel (``pip download --no-deps``) into ``dest``, once;
    None when the registry cannot be reached. The audio is never committed."""
    import subprocess
    import sys
    import tempfile
    import zipfile

    if (dest / "sample.wav").is_file() and (dest / "sample.rttm").is_file():
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                              "pyannote.audio==4.0.7", "-d", tmp], check=False,
                             capture_output=True)
        wheels = list(Path(tmp).glob("pyannote_audio-*.whl"))
        if got.returncode != 0 or not wheels:
            return None
        dest.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as z:
            for name in ("sample.wav", "sample.rttm"):
                (dest / name).write_bytes(z.read(f"pyannote/audio/sample/{name}"))
    return dest


def pyannote_dir(fetch: bool = False) -> Path | None:
    """Where the sample is: ``ONSEI_PYANNOTE_SAMPLE``, an installed pyannote.audio, the cache
    (``fetch``: download it there when it is nowhere)."""
    env = os.environ.get("ONSEI_PYANNOTE_SAMPLE")
    cands = [Path(env)] if env else []
    cands.append(PYANNOTE_CACHE)
    spec = importlib.util.find_spec("pyannote")
    for root in (spec.submodule_search_locations or []) if spec else []:
        cands.append(Path(root) / "audio" / "sample")
    for c in cands:
        if (c / "sample.wav").is_file() and (c / "sample.rttm").is_file():
            return c
    return fetch_pyannote() if fetch else None


def pyannote_sample(fetch: bool = False,
                    ) -> tuple[np.ndarray, list[tuple[float, float, str]]] | None:
    """The sample's audio and its reference turns (start, end, speaker); None when absent."""
    d = pyannote_dir(fetch)
    if d is None:
        return None
    turns = []
    for line in (d / "sample.rttm").read_text().splitlines():
        f = line.split()
        turns.append((float(f[3]), float(f[3]) + float(f[4]), f[7]))
    return _load(d / "sample.wav"), turns


def single_turns(turns: list[tuple[float, float, str]],
                 min_seconds: float) -> list[tuple[int, float, float, str]]:
    """Each turn less any overlap with another speaker's (the longer side kept), if still at
    least ``min_seconds``: (turn index, start, end, speaker)."""
    out = []
    for i, (a, b, spk) in enumerate(turns):
        for c, e, s in turns:
            if s != spk and c < b and e > a:
                a, b = (a, c) if c - a >= b - e else (e, b)
        if b - a >= min_seconds:
            out.append((i, a, b, spk))
    return out


def pyannote_cases(min_seconds: float = 2.0) -> list[Case]:
    got = pyannote_sample()
    if got is None:
        return []
    audio, turns = got
    cases = [Case(f"pyannote-turn{i}-{spk}", audio[int(a * SR):int(b * SR)], 1, "pyannote")
             for i, a, b, spk in single_turns(turns, min_seconds)]
    for i in range(len(turns) - 1):  # two speakers: this turn and the next other speaker's
        a, b, spk = turns[i]
        nxt = next(((c, e) for c, e, s in turns[i + 1:] if s != spk), None)
        if nxt and b - a >= 1.0 and nxt[1] - nxt[0] >= 1.0:
            cases.append(Case(f"pyannote-change{i}", audio[int(a * SR):int(nxt[1] * SR)], 2,
                              "pyannote"))
    return cases


def _join(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.concatenate([x, np.zeros(int(0.3 * SR), np.float32), y])


def joined_cases(voices: dict[str, list[np.ndarray]], source: str) -> list[Case]:
    names = sorted(voices)
    cases = []
    for v in names:
        lines = voices[v]
        cases += [Case(f"{v}-{i}", c, 1, source) for i, c in enumerate(lines)]
        cases += [Case(f"{v}-{i}+{i + 1}", _join(lines[i], lines[i + 1]), 1, source)
                  for i in range(len(lines) - 1)]
    for a in names:
        for b in names:
            if a != b:
                n = min(len(voices[a]), len(voices[b]))
                cases += [Case(f"{a}-{i}+{b}-{i}", _join(voices[a][i], voices[b][i]), 2, source)
                          for i in range(n)]
    return cases


def cases() -> list[Case]:
    out: list[Case] = []
    for voices, source in ((fillets_lines(), "fillets"), (sphinx_lines(), "pocketsphinx")):
        if voices:
            out += joined_cases(voices, source)
    return out + pyannote_cases()
