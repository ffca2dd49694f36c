"""Language ID of short lone clips with more than the clip: the language of the shard around it,
and the clip's speech said again (tiled) before Whisper's language head looks at it.

Looks at the clips of bench/language_short.py (each a file of its own) three ways through the
asr stage's own language ID (VAD, windows, Whisper's distributions, stopped before decoding):

- ``short``: the clip as it is (what the stage sees today);
- ``tile<N>``: the clip's speech (trimmed to where it is within 40 dB of its peak) repeated with
  0.2 s pauses until the copies and their pauses make N s (the last pause left off), then
  padded as the clip was;
- ``long``: the same voices' longer files (prompts of 4-12 s; for espeak-ng, each language's
  lines read as one text), the files a shard built like a real one holds beside the short
  ones, which the stage identifies surely: they give the shard's language.

``ONSEI_BENCH_LID_DUMP=FILE python -m bench.language_context`` writes every look (name,
language, real, half, seconds, variant, shares, dists); bench/language_prior.py judges rules on
it, by half. ``ONSEI_BENCH_LID_CLIPS`` (prompts per voice, 30), ``ONSEI_BENCH_LID_LONG`` (long
prompts per voice, 12), ``ONSEI_BENCH_LID_TILES`` (``6,12``), ``ONSEI_BENCH_LID_HALVES``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

SR = 16000
GAP = 0.2  # s of silence between the copies of a tiled clip


def speech_of(audio: np.ndarray, floor_db: float = 40.0) -> np.ndarray:
    """``audio`` trimmed to its first and last 10 ms frame within ``floor_db`` of its peak."""
    frame = SR // 100
    n = audio.size // frame
    if n == 0:
        return audio
    rms = np.sqrt((audio[: n * frame].reshape(n, frame) ** 2).mean(axis=1) + 1e-12)
    loud = np.flatnonzero(rms >= rms.max() * 10 ** (-floor_db / 20))
    return audio[loud[0] * frame:(loud[-1] + 1) * frame]


def tiled(audio: np.ndarray, seconds: float, pad: float = 0.3) -> np.ndarray:
    """The clip's speech repeated with :data:`GAP` pauses until copies and pauses make
    ``seconds`` (the last pause left off), padded with ``pad`` either side."""
    speech = speech_of(audio)
    gap = np.zeros(int(GAP * SR), np.float32)
    reps = max(1, int(np.ceil(seconds * SR / (speech.size + gap.size))))
    z = np.zeros(int(pad * SR), np.float32)
    return np.concatenate([z, *([speech, gap] * reps)[:-1], z]).astype(np.float32)


def long_clips(per_voice: int) -> list[Any]:
    """The voices' files of 4-12 s (prompts) and each espeak-ng language's lines as one text."""
    from fixtures.prompt_voices import decode_g722, voice_files
    from fixtures.short_languages import ESPEAK_LINES, PROMPT_VOICES, ShortClip, _pad
    from fixtures.speechgen import synth

    out: list[Any] = []
    for lang, (package, folder) in PROMPT_VOICES.items():
        files = voice_files(package, folder, 4.0, 12.0) or []
        step = max(1, len(files) // per_voice)
        out += [ShortClip(f"lidlong.{lang}.{p.stem}", lang, True, _pad(decode_g722(p)))
                for p in files[::step][:per_voice]]
    for lang, lines in ESPEAK_LINES.items():
        for i in range(4):  # four texts a language (its lines from four starts): both halves
            text = " ".join(lines[i * 2:] + lines[:i * 2])
            out.append(ShortClip(f"lidlong.espeak-{lang}.{i}", lang, False,
                                 _pad(synth(text, voice=lang))))
    return out


def main() -> None:
    from bench.language_short import look
    from fixtures.short_languages import ShortClip, espeak_clips, prompt_clips

    per_voice = int(os.environ.get("ONSEI_BENCH_LID_CLIPS", "30"))
    halves = os.environ.get("ONSEI_BENCH_LID_HALVES", "tune,held").split(",")
    tiles = [float(t) for t in os.environ.get("ONSEI_BENCH_LID_TILES", "6,12").split(",") if t]
    short = [c for c in prompt_clips(per_voice, first=16) + espeak_clips() if c.half in halves]
    longs = [c for c in long_clips(int(os.environ.get("ONSEI_BENCH_LID_LONG", "12")))
             if c.half in halves]
    jobs: list[tuple[str, Any]] = [("long", c) for c in longs] + [("short", c) for c in short]
    for t in tiles:
        jobs += [(f"tile{t:g}", ShortClip(c.name, c.language, c.real, tiled(c.audio, t)))
                 for c in short]
    out: list[dict[str, Any]] = []
    t0, c0 = time.perf_counter(), time.process_time()
    for variant in dict.fromkeys(v for v, _ in jobs):
        clips = [c for v, c in jobs if v == variant]
        for x, c in zip(look(clips), clips):
            out.append({"name": x.name, "language": x.language, "real": x.real,
                        "half": x.half, "variant": variant,
                        "seconds": next(s.seconds for s in short + longs if s.name == c.name),
                        "shares": None if x.guess is None else x.guess.shares,
                        "dists": x.dists})
        print(f"{variant}: {len(clips)} clips, {time.perf_counter() - t0:.0f} s wall, "
              f"{time.process_time() - c0:.0f} CPU s", flush=True)
    Path(os.environ.get("ONSEI_BENCH_LID_DUMP", "language_context.json")).write_text(
        json.dumps(out))


if __name__ == "__main__":
    main()
