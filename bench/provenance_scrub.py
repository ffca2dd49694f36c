"""The contamination scrub on embedded test utterances (docs/provenance.md, "Measured").

Real speech (fixtures/dedup_corpus.py: pocketsphinx-testdata's LibriVox and card lines,
fillets-ng's elk lines; pyannote's call where found): one half of the clips is the test set
(clean originals, written as WAV files with transcripts); the corpus is long files in which
each test utterance, changed the ways copies are (mp3 64k, opus 24k, telephone band, gain,
trims, resampled to 22.05 / 44.1 kHz), sits between other speech (the other half of the clips,
changed too, and espeak-ng sentences) with 0.3 s pauses, cut into segments as ASR cuts them
(at pauses, moved by up to 0.25 s, utterances merged up to 15 s, a longer one cut inside).
Segments with no test audio: the other clips under every change, espeak-ng sentences in four
voices, the test sentences said by those voices (same words, other recordings), and 3,000
random 2-15 s stretches of those back to back. Each segment is fingerprinted as enhance does.
An embedded utterance counts as removed when 90 % of it lies in removed segments; a segment
holding none of the test audio and removed is a false removal. The clips are split by a hash
of their name, and the figures come per half ("tune": the half the constants were looked at
on; "held out": the other), so a constant chosen on one is checked on clips it never saw.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

SR = 16000


def _half(name: str) -> str:
    return "tune" if hashlib.sha256(name.encode()).digest()[0] < 128 else "held out"


def _resampled(rate: int):  # type: ignore[no-untyped-def]
    from common.shards.audio import resample

    def run(a: np.ndarray) -> np.ndarray:
        return resample(resample(a, SR, rate), rate, SR)
    return run


SENTENCES = [
    "we talked for a while about the weather and the roads",
    "the market opens early on saturdays in the summer",
    "nobody knew where the old map had gone after that",
    "she wrote the numbers down and checked them twice",
    "the train was late again so we walked to the station",
    "please leave the keys on the table by the front door",
    "they planted apple trees along the northern fence last year",
    "his brother fixed the radio with a piece of copper wire",
    "the museum closes at five but the garden stays open",
    "after the storm the river rose higher than anyone remembered",
    "a small boat drifted past the harbour lights at midnight",
    "the committee will meet on thursday to review the budget",
]
VOICES = ("en-us", "en+f3", "en+m7", "en-gb-scotland")
PAUSE = int(0.3 * SR)


def _segments(parts: list[np.ndarray], rng: np.random.Generator,
              max_seconds: float = 15.0) -> list[tuple[int, int]]:
    """Cut points as ASR finds them: at the pauses between utterances (moved by up to 0.25 s),
    consecutive utterances merged up to ``max_seconds``, an utterance longer than that cut
    inside."""
    bounds, pos = [0], 0
    for p in parts:
        pos += p.size + PAUSE
        bounds.append(pos)
    total = bounds[-1]
    cuts, start = [], 0
    for b in bounds[1:]:
        while b - start > max_seconds * SR:
            start += int(rng.uniform(5.0, max_seconds) * SR)
            cuts.append(start)
        if b - start >= rng.uniform(2.0, max_seconds) * SR or b == total:
            jitter = int(rng.uniform(-0.25, 0.25) * SR)
            start = min(total, max(start + SR, b - PAUSE // 2 + jitter)) if b != total else total
            cuts.append(start)
    edges = [0, *sorted(set(cuts))]
    return [(a, b) for a, b in itertools.pairwise(edges) if b - a > 0]


def build(seed: int = 0, rounds: int = 2, extra_clean: int = 3000):  # type: ignore[no-untyped-def]
    from fixtures.dedup_corpus import TRANSFORMS, originals, other_speakers
    from fixtures.speechgen import synth

    rng = np.random.default_rng(seed)
    clips = originals()
    test = [c for i, c in enumerate(clips) if i % 2 == 0]
    other = [c for i, c in enumerate(clips) if i % 2 == 1]
    changes = {**TRANSFORMS, "resample_22k": _resampled(22050), "resample_44k": _resampled(44100)}
    names = sorted(changes)
    fillers = [synth(t, v) for t in SENTENCES for v in VOICES]
    pieces_other = [changes[n](c.audio) for c in other for n in names]
    segments = []  # (audio, {test utterance: seconds of it inside}, half)
    embedded = []  # (utterance id, seconds, half)
    for r in range(rounds):
        for k, c in enumerate(test):
            change = names[(k + r) % len(names)]
            body = changes[change](c.audio).astype(np.float32)
            uid = f"{c.name}#{r}"
            embedded.append((uid, body.size / SR, _half(c.name)))
            around = [pieces_other[rng.integers(len(pieces_other))] if j % 2 else
                      fillers[rng.integers(len(fillers))] for j in range(4)]
            parts = [*around[:2], body, *around[2:]]
            gap = np.zeros(PAUSE, np.float32)
            long = np.concatenate([x for p in parts for x in (p.astype(np.float32), gap)])
            u0 = sum(p.size + PAUSE for p in parts[:2])
            u1 = u0 + body.size
            for a, b in _segments(parts, rng):
                inside = max(0, min(b, u1) - max(a, u0)) / SR
                segments.append((long[a:b], {uid: inside} if inside > 0 else {}, _half(c.name)))
    # segments holding no test audio: the other clips changed every way, other sentences,
    # and the test sentences said by other voices (same words, other recordings)
    for c in other:
        segments += [(changes[n](c.audio), {}, _half(c.name)) for n in names]
    segments += [(f, {}, _half(str(i))) for i, f in enumerate(fillers)]
    alike = [(x.audio, c.name) for c in test for x in other_speakers(c.text)]
    segments += [(a, {}, _half(n)) for a, n in alike]
    # and many more: random stretches of 1-3 of those pieces back to back
    pool = [*pieces_other, *fillers, *(a for a, _ in alike)]
    for i in range(extra_clean):
        joined = np.concatenate([pool[rng.integers(len(pool))] for _ in range(rng.integers(1, 4))])
        n = min(joined.size, int(rng.uniform(2.0, 15.0) * SR))
        a = int(rng.integers(0, joined.size - n + 1))
        segments.append((joined[a:a + n], {}, _half(f"extra{i}")))
    return test, segments, embedded


def measure(quick: bool = False) -> dict[str, dict[str, float]]:
    from services.dedup.fingerprint import fingerprint
    from services.ops.provenance.scrub import ScrubIndex

    test, segments, embedded = build(rounds=1 if quick else 2,
                                     extra_clean=300 if quick else 3000)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "testset"
        root.mkdir()
        for c in test:
            stem = c.name.replace("/", "_")
            sf.write(root / f"{stem}.wav", c.audio, SR)
            (root / f"{stem}.txt").write_text(c.text)
        index = ScrubIndex.build([root])
    removed_in: dict[str, float] = {}
    out: dict[str, dict[str, float]] = {}
    clean = {"tune": [0, 0], "held out": [0, 0]}
    for audio, inside, half in segments:
        hit = index.by_audio(fingerprint(audio, SR)) is not None
        if inside:
            for uid, s in inside.items():
                if hit:
                    removed_in[uid] = removed_in.get(uid, 0.0) + s
        else:
            clean[half][0] += 1
            clean[half][1] += int(hit)
    for half in ("tune", "held out"):
        mine = [(u, s) for u, s, h in embedded if h == half]
        got = sum(1 for u, s in mine if removed_in.get(u, 0.0) >= 0.9 * s)
        out[half] = {"utterances": len(mine), "recall": got / max(1, len(mine)),
                     "clean_segments": clean[half][0],
                     "false_removal": clean[half][1] / max(1, clean[half][0])}
    return out


def _rows(quick: bool) -> list[dict]:
    got = measure(quick)
    rows = []
    for half, m in got.items():
        rows.append({"name": f"scrub recall, embedded test utterances ({half})",
                     "ours": round(m["recall"], 4), "baseline": None, "ratio": None,
                     "goal": ">= 0.95", "unit": f"of {m['utterances']}"})
        rows.append({"name": f"scrub false removals ({half})",
                     "ours": round(m["false_removal"], 5), "baseline": None, "ratio": None,
                     "goal": "<= 0.001", "unit": f"of {m['clean_segments']} segments"})
    return rows


ROWS = [_rows]

if __name__ == "__main__":
    for k, v in measure("--quick" in sys.argv).items():
        print(k, v)
