"""Clipped English, the stage against its peer, on files apart from the hard set's ``loud`` one.

The hard ``loud`` set is one file (fixtures/hard_speech.py: English driven 8x into clipping);
one word there is 0.01 of quick WER. These groups tell whether a gap on it comes from clipping
or from that file's speech (docs/asr.md, "Hard sets"):

- ``source``: the loud file's own speech (hard seed + 3, the hard set's seven voices) clean and
  driven 2x, 4x, 8x, 16x and 32x into clipping, quick (40 s) and full (90 s);
- ``voices``: three other files of those voices (seeds 901-903, 60 s), clean, 6x and 12x;
- ``dev`` / ``held``: the English files of the quick ``dev`` / ``held`` sets (bench/asr_sets.py:
  espeak-ng, LibriVox and card readings, their telephone band, Asterisk's prompts) driven 8x.

``python -m bench.asr_clipped [GROUP,...] [--config NAME:ENV=VALUE,...]`` prints one JSON row
per group and set: ours against the peer at its defaults (its texts cached beside the sets),
with the per-file table. Each side runs in a process of its own (bench/asr_peer.run_side).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.asr_peer import run_side, set_errors
from bench.asr_sets import cache_dir, load, saved
from fixtures.longform import LongForm

GROUPS = ("source", "voices", "dev", "held")


def clip(audio: np.ndarray, drive: float) -> np.ndarray:
    """``audio`` with its peak driven to ``drive`` x full scale, then clipped at +-1."""
    loud = audio * (drive / max(1e-9, float(np.abs(audio).max())))
    return np.clip(loud, -1.0, 1.0).astype(np.float32)


def _files(group: str) -> Iterator[tuple[str, str, np.ndarray, str, float]]:
    """(key, set, audio, reference, seconds) of ``group``'s files."""
    from fixtures.hard_speech import SEED, VOICES
    from fixtures.longform import make_longform

    if group in ("source", "voices"):
        spoken: list[tuple[str, LongForm, tuple[float, ...]]] = (
            [(q, make_longform("en", s, n, seed=SEED + 3, voices=VOICES), (2, 4, 8, 16, 32))
             for q, s, n in (("quick", 40.0, 6), ("full", 90.0, 12))] if group == "source" else
            [(str(i), make_longform("en", 60.0, 8, seed=seed, voices=VOICES), (6, 12))
             for i, seed in enumerate((901, 902, 903))])
        for tag, f, drives in spoken:
            yield f"clean-{tag}", "clean", f.audio, f.reference, f.seconds
            for d in drives:
                yield f"clip{d}-{tag}", f"clip{d}", clip(f.audio, d), f.reference, f.seconds
        return
    info, audio = load(saved(group, True))
    for x in info:
        if x["language"] == "en":
            yield x["key"], x["set"], clip(audio[x["key"]], 8.0), x["reference"], x["seconds"]


def build(group: str) -> Path:
    """``group``'s files as one ``.npz`` beside a ``.json`` of their references; built once."""
    path = cache_dir() / f"clipped-{group}.npz"
    meta = path.with_suffix(".json")
    if not (path.is_file() and meta.is_file()):
        arrays, info = {}, []
        for key, name, audio, reference, seconds in _files(group):
            arrays[key] = audio
            info.append({"key": key, "set": name, "language": "en", "reference": reference,
                         "seconds": seconds})
        np.savez(path, **arrays)
        meta.write_text(json.dumps(info))
    return path


def rows(group: str, label: str, env: dict[str, str]) -> list[dict]:
    sets = build(group)
    info, _ = load(sets)
    cached = sets.with_name(f"peer-{sets.stem}.json")
    if not cached.is_file():
        cached.write_text(json.dumps(run_side("peer", sets, {})))
    peer = json.loads(cached.read_text())
    ours = run_side("ours", sets, env)
    return [{"group": group, "config": label, **r}
            for r in set_errors(info, {"ours": ours["texts"], "peer": peer["texts"]}, {"en"},
                                label)]


if __name__ == "__main__":
    args = sys.argv[1:]
    configs: list[tuple[str, dict[str, str]]] = []
    groups: list[str] = []
    it = iter(args)
    for a in it:
        if a == "--config":  # NAME:K=V,K=V (the stage's env; the peer at its defaults)
            label, _, spec = next(it).partition(":")
            configs.append((label, dict(kv.split("=", 1) for kv in spec.split(",") if kv)))
        else:
            groups += [g for g in a.split(",") if g]
    for g in groups or GROUPS:
        for label, env in configs or [("defaults", {})]:
            for row in rows(g, label, env):
                print(json.dumps(row), flush=True)
