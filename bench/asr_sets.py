"""Held-out long-form sets for the asr stage against its peer (bench/asr_peer.py).

Built as bench/asr.py builds its own (espeak-ng sentences with 0.3-2 s pauses; the Debian
packages' LibriVox and card-reading clips; their 8 kHz telephone band), but from other seeds and
more voices, and split in two halves: ``dev`` (the files decoding choices were tuned on) and
``held`` (looked at only once values were chosen). Every set holds files the stage must drop
(a non-target language), as a user's crawl does.

Arrays are cached as ``.npz`` under ``ONSEI_BENCH_CACHE`` (default: the system's temp folder)
so the side processes read the same decoded audio without synthesising it again.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from fixtures.longform import (
    LongForm,
    make_longform,
    real_english,
    real_german,
    real_longform,
    telephone_band,
)

# more voices than the other benches' two: accents and registers where greedy and beam differ
EN_VOICES = ("en-us", "en-gb+f3", "en-gb-scotland", "en-gb-x-rp+m3", "en-029+f2")
JA_VOICES = ("ja", "ja+f3", "ja+m3")
SEEDS = {"dev": 100, "held": 200}


def build(split: str, quick: bool) -> dict[str, list[LongForm]]:
    """Sets by name for ``split`` (``dev``, ``held``, or ``hard``: fixtures/hard_speech.py);
    ``quick``: shorter files."""
    if split == "hard":
        from fixtures.hard_speech import build as hard

        return hard(quick)
    seed = SEEDS[split]
    secs = 60.0 if quick else 150.0
    n = 8 if quick else 20
    synthetic = [make_longform("en", secs, n, seed=seed, voices=EN_VOICES),
                 make_longform("en", secs, n, seed=seed + 1, voices=EN_VOICES),
                 make_longform("ja", secs, n, seed=seed, voices=JA_VOICES),
                 make_longform("es", secs / 2, n // 3, seed=seed)]
    sets = {"synthetic": synthetic if not quick else synthetic[:1] + synthetic[2:]}
    en = real_english()
    if en:
        real = [real_longform(en, secs, seed=seed), real_longform(en, secs, seed=seed + 1)]
        de = [("", a) for a in real_german()]
        if de:
            real.append(real_longform(de, secs / 2, seed=seed, language="de"))
        real = real[1:] if quick else real
        sets["real"] = real
        sets["telephone"] = [telephone_band(f) for f in real]
    return sets


def cache_dir() -> Path:
    d = Path(os.environ.get("ONSEI_BENCH_CACHE", tempfile.gettempdir())) / "onsei-asr-sets"
    d.mkdir(parents=True, exist_ok=True)
    return d


def saved(split: str, quick: bool) -> Path:
    """The sets of ``split`` as one ``.npz`` (audio) beside a ``.json`` (languages, references);
    built once."""
    path = cache_dir() / f"{split}-{'quick' if quick else 'full'}.npz"
    meta = path.with_suffix(".json")
    if not (path.is_file() and meta.is_file()):
        sets = build(split, quick)
        arrays, info = {}, []
        for name, files in sets.items():
            for i, f in enumerate(files):
                key = f"{name}-{i}"
                arrays[key] = f.audio
                info.append({"key": key, "set": name, "language": f.language,
                             "reference": f.reference, "seconds": f.seconds})
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        tmp.replace(path)
        meta.write_text(json.dumps(info))
    return path


def load(path: Path) -> tuple[list[dict], dict[str, np.ndarray]]:
    """(file infos, audio by key) of a :func:`saved` set."""
    info = json.loads(path.with_suffix(".json").read_text())
    with np.load(path) as z:
        audio = {k: np.asarray(z[k], dtype=np.float32) for k in z.files}
    return info, audio
