"""Corpus speaker labels (``onsei speakers``, docs/speakers.md) on real voices spread over many
files and shards.

Voices: pocketsphinx-testdata's LibriVox reader and "cards" speaker, and fillets-ng-data's six
tagged character voices (elk, viking1, viking2, warcraft). Each voice's lines are cut into
files of up to three lines; half the files are then joined in pairs of two voices taking
turns, and each file is heard through one channel (clean, MP3 64k, telephone 8 kHz, or 20 dB
of noise), so one voice's files differ as recordings from different places do. Each segment is
embedded as the enhance stage does (Resemblyzer at 16 kHz), each file's speakers labelled as it
does (services/enhance/speakers.py), the files written two to a shard as enhance's speakers
files, and ``onsei speakers`` run on that output root in two steps (half the shards, then the
rest: the incremental path). Scored over segments, against the true voice: purity (share of
segments in their corpus speaker's majority voice, goal >= 0.95), wrong merges (pairs of
different voices under one corpus id / all such pairs, goal <= 1 %), wrong splits (pairs of one
voice under two ids / all such pairs), and labels the second run changed (goal 0).

    python -m bench.speakers [--thresholds 0.7,0.75,0.8]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SR = 16000
FILLETS = Path("/usr/share/games/fillets-ng/sound")
FILLETS_VOICES = {"fillets-elk-l": "elk/en/deu-l-*.ogg", "fillets-elk-p": "elk/en/deu-p-*.ogg",
                  "fillets-viking-z": "viking1/en/d1-z-*.ogg",
                  "fillets-viking-7": "viking2/en/dr-7-*.ogg",
                  "fillets-war-a": "warcraft/en/war-a-*.ogg",
                  "fillets-war-k": "warcraft/en/war-k-*.ogg"}
CHANNELS = ("clean", "mp3_64k", "telephone_8k", "noise_20dB")
PER_FILE = 3


@dataclass
class File:
    key: str
    clips: list[np.ndarray]
    voices: list[str]


def voices(min_seconds: float = 1.0) -> dict[str, list[np.ndarray]]:
    from fixtures.known_speakers import _load, sphinx_lines

    out = dict(sphinx_lines())
    for name, pattern in FILLETS_VOICES.items():
        clips = [_load(p) for p in sorted(FILLETS.glob(pattern))]
        clips = [c for c in clips if c.size >= min_seconds * SR]
        if len(clips) >= 2:
            out[name] = clips
    return out


def files(vs: dict[str, list[np.ndarray]], seed: int = 0) -> list[File]:
    from fixtures.dedup_corpus import TRANSFORMS

    rng = np.random.default_rng(seed)
    singles = [(v, clips[i:i + PER_FILE]) for v, clips in sorted(vs.items())
               for i in range(0, len(clips), PER_FILE)]
    order = rng.permutation(len(singles))
    out: list[File] = []
    i = 0
    while i < len(order):
        a = singles[order[i]]
        b = singles[order[i + 1]] if i + 1 < len(order) else None
        if b is not None and b[0] != a[0] and rng.random() < 0.5:
            clips = [x for pair in zip(a[1], b[1]) for x in pair] + a[1][len(b[1]):] \
                + b[1][len(a[1]):]
            who = [x for pair in zip([a[0]] * len(a[1]), [b[0]] * len(b[1])) for x in pair] \
                + [a[0]] * max(0, len(a[1]) - len(b[1])) + [b[0]] * max(0, len(b[1]) - len(a[1]))
            i += 2
        else:
            clips, who = list(a[1]), [a[0]] * len(a[1])
            i += 1
        channel = CHANNELS[len(out) % len(CHANNELS)]
        if channel != "clean":
            clips = [TRANSFORMS[channel](c) for c in clips]
        out.append(File(f"file{len(out):03d}-{channel}", clips, who))
    return out


def embed(fs: list[File]) -> list[tuple[np.ndarray, list[int], list[int | None]]]:
    """Per file: its segments' embeddings, voiced partials, and labels within the file (None:
    voice unknown)."""
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.speakers import cluster

    enc = SpeakerEncoder()
    out = []
    for f in fs:
        sc = enc.score(f.clips)
        e = np.stack([s.embedding for s in sc])
        parts = [s.parts for s in sc]
        out.append((e, parts, cluster(list(e), parts=parts)))
    return out


def write_root(root: Path, fs: list[File], embs, per_shard: int = 2):
    """The output root as enhance leaves it: speakers files and done records."""
    from common.ledger.store import Ledger
    from common.storage import open_store
    from services.speakers.embeddings import EmbeddingsWriter
    from services.speakers.settings import SpeakersSettings
    from services.stages import PIPELINE

    s = SpeakersSettings(output_url=str(root / "out"), scratch_dir=str(root / "scratch"))
    ledger = Ledger(open_store(s.output_url, s), s, PIPELINE)
    truth: dict[str, str] = {}
    for shard in range((len(fs) + per_shard - 1) // per_shard):
        w = EmbeddingsWriter()
        for f, (e, parts, labels) in list(zip(fs, embs))[shard * per_shard:(shard + 1) * per_shard]:
            for j, (v, p, lb) in enumerate(zip(e, parts, labels)):
                if lb is None:  # no voice label within its file: the writer leaves it out too
                    continue
                seg = f"{f.key}_{j:04d}"
                w.add(seg, f"{f.key}#s{lb}", v, p)
                truth[f"{seg}@{shard:06d}"] = f.voices[j]
        w.write(root / "out" / PIPELINE.side_output_key("enhance", "speakers", s, shard))
        ledger.mark_done("enhance", shard, {"counts": {}})
    return s, ledger, truth


def labels_of(s, shards: list[int]) -> dict[str, str]:
    from common.storage import open_store
    from services.speakers.result import SpeakersReader

    r = SpeakersReader(open_store(s.output_url, s), s)
    r.refresh()
    out = {}
    for shard in shards:
        for seg, (spk, _) in (r.labels(shard) or {}).items():
            out[f"{seg}@{shard:06d}"] = spk
    return out


def score(labels: dict[str, str], truth: dict[str, str]) -> dict[str, float]:
    ids = sorted(truth)
    got = np.array([labels.get(i, "") for i in ids])
    want = np.array([truth[i] for i in ids])
    pure = sum(max((want[got == c] == v).sum() for v in set(want[got == c])) for c in set(got))
    same_spk = got[:, None] == got[None, :]
    same_voice = want[:, None] == want[None, :]
    off = ~np.eye(len(ids), dtype=bool)
    diff = (~same_voice & off).sum()
    same = (same_voice & off).sum()
    return {"segments": len(ids), "labelled": int((got != "").sum()),
            "purity": round(pure / len(ids), 4),
            "wrong_merge": round(float((same_spk & ~same_voice & off).sum() / max(diff, 1)), 4),
            "wrong_split": round(float((~same_spk & same_voice & off).sum() / max(same, 1)), 4),
            "voices": len(set(want)), "corpus_speakers": len(set(got) - {""})}


def run(thresholds: list[float]) -> list[dict]:
    from services.speakers.run import SpeakerLinker

    vs = voices()
    if len(vs) < 2:
        return []
    fs = files(vs)
    embs = embed(fs)
    rows = []
    for t in thresholds:
        with tempfile.TemporaryDirectory() as tmp:
            s, ledger, truth = write_root(Path(tmp), fs, embs)
            s = s.model_copy(update={"speakers_link_threshold": t})
            shards = sorted(ledger.done_ids("enhance"))
            half = shards[:len(shards) // 2]
            from common.storage import open_store

            store = open_store(s.output_url, s)
            SpeakerLinker(s, store, ledger).run(half)
            first = labels_of(s, half)
            SpeakerLinker(s, store, ledger).run()
            labels = labels_of(s, shards)
            changed = sum(labels.get(k) != v for k, v in first.items())
            rows.append({"threshold": t, "files": len(fs), "shards": len(shards),
                         **score(labels, truth), "changed_by_second_run": changed})
    return rows


def accuracy(quick: bool) -> list[dict]:
    from services.speakers.settings import SpeakersSettings

    t = SpeakersSettings.model_fields["speakers_link_threshold"].default
    out = []
    for r in run([t]):
        out.append({"name": f"speakers: purity, {r['voices']} real voices over {r['files']} "
                            f"files / {r['shards']} shards, 4 channels", "ours": r["purity"],
                    "baseline": None, "ratio": None, "goal": ">= 0.95", "unit": "share", **r})
        out.append({"name": "speakers: wrong merges (pairs of different voices, one id)",
                    "ours": r["wrong_merge"], "baseline": None, "ratio": None,
                    "goal": "<= 0.01", "unit": "share of pairs"})
        out.append({"name": "speakers: labels changed by the second, incremental run",
                    "ours": r["changed_by_second_run"], "baseline": None, "ratio": None,
                    "goal": "0", "unit": "segments"})
    return out


ROWS = [accuracy]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--thresholds", default="0.65,0.7,0.75,0.8,0.85")
    a = ap.parse_args()
    for r in run([float(x) for x in a.thresholds.split(",")]):
        print(json.dumps(r))


if __name__ == "__main__":
    main()
