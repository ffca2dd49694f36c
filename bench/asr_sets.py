"""Held-out long-form sets for the asr stage against its peer (bench/asr_peer.py).

Built as bench/asr.py builds its own (espeak-ng sentences with 0.3-2 s pauses; the Debian
packages' LibriVox and card-reading clips; their 8 kHz telephone band), but from other seeds and
more voices, and split in two halves: ``dev`` (the files decoding choices were tuned on) and
``held`` (looked at only once values were chosen). Every set holds files the stage must drop
(a non-target language), as a user's crawl does. ``prompts``: real read English with no clip
heard twice (Asterisk's prompt voice, fixtures/distinct_english.py), the prompts split between
``dev`` and ``held`` by a hash of their text: the ``real`` set's 10 clips in rounds are too few
words to tell 0.005 of WER apart (one "clubs" heard "close" moves a file by 0.008).

Arrays are cached as ``.npz`` under ``ONSEI_BENCH_CACHE`` (default: the system's temp folder)
so the side processes read the same decoded audio without synthesising it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from pathlib import Path

import numpy as np

from fixtures.longform import (
    SR,
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
VERSION = 2  # in the cache's name: a set added or changed is built anew, its peer run too
PROMPT_SECONDS = 150.0  # each prompts file; quick: one, full: every prompt of the half


def prompt_half(split: str) -> list[tuple[str, np.ndarray]]:
    """The distinct prompts (fixtures/distinct_english.py) of ``split``'s half, by a hash of
    their text (the same halves on every machine); none when the packages cannot be fetched."""
    from fixtures.distinct_english import prompt_sentences
    from fixtures.nonspeech import FetchError

    try:
        prompts = prompt_sentences()
    except FetchError:
        return []
    return [(t, a) for t, a in prompts if in_half(t, split)]


def in_half(text: str, split: str) -> bool:
    """Whether a prompt of this text is in ``split``'s half (``dev`` or ``held``)."""
    return hashlib.sha256(text.encode()).digest()[0] % 2 == list(SEEDS).index(split)


def prompt_files(clips: list[tuple[str, np.ndarray]], seconds: float, seed: int,
                 files: int | None) -> list[LongForm]:
    """``clips`` in one shuffled order, each heard once, as files of about ``seconds`` (at
    most ``files`` of them; None: until the clips run out)."""
    rng = random.Random(f"prompts-{seed}")
    order = rng.sample(clips, len(clips))
    out: list[LongForm] = []
    while order and (files is None or len(out) < files):
        take, t = [], 0.0
        while order and t < seconds:
            take.append(order.pop())
            t += take[-1][1].size / SR + 1.15  # the mean pause real_longform puts between
        out.append(real_longform(take, seconds=1e9, seed=seed + len(out), repeat=False))
    return out


def build(split: str, quick: bool, only: tuple[str, ...] = ()) -> dict[str, list[LongForm]]:
    """Sets by name for ``split`` (``dev``, ``held``, or ``hard``: fixtures/hard_speech.py);
    ``quick``: shorter files; ``only``: just the sets so named."""
    if split == "hard":
        from fixtures.hard_speech import build as hard

        return {k: v for k, v in hard(quick).items() if not only or k in only}
    if only == ("prompts",):  # nothing else synthesised
        prompts = prompt_half(split)
        seed = SEEDS[split]
        return {"prompts": prompt_files(prompts, PROMPT_SECONDS, seed, 1 if quick else None)
                } if prompts else {}
    sets = _build(split, quick)
    return {k: v for k, v in sets.items() if not only or k in only}


def _build(split: str, quick: bool) -> dict[str, list[LongForm]]:
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
    prompts = prompt_half(split)
    if prompts:
        sets["prompts"] = prompt_files(prompts, PROMPT_SECONDS, seed, 1 if quick else None)
    return sets


def cache_dir() -> Path:
    d = Path(os.environ.get("ONSEI_BENCH_CACHE", tempfile.gettempdir())) / "onsei-asr-sets"
    d.mkdir(parents=True, exist_ok=True)
    return d


def saved(split: str, quick: bool, only: tuple[str, ...] = ()) -> Path:
    """The sets of ``split`` (``only``: those named) as one ``.npz`` (audio) beside a ``.json``
    (languages, references); built once."""
    stem = "-".join([split, "quick" if quick else "full", *only])
    path = cache_dir() / (f"{stem}-v{VERSION}.npz" if split in SEEDS else f"{stem}.npz")
    meta = path.with_suffix(".json")
    if not (path.is_file() and meta.is_file()):
        sets = build(split, quick, only)
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
