"""Duplicate detection (docs/dedup.md): precision and recall on copies of real speech; the
candidate rate of real speech (bench/dedup_rate.py) and the index at scale
(bench/dedup_scale.py) are rows of this module too.

``accuracy``: every real clip of fixtures/dedup_corpus.py with its 12 copies, the same words by 4
espeak-ng voices, all in one output root, through the real ``onsei dedup`` (text and audio
keys, DuckDB candidates, fingerprint confirmation, clusters). Pairs in one cluster are the
prediction; pairs of one origin are the truth. Copies' texts are the reference with a word
dropped where audio was cut (a re-transcription differs at least that much).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.dedup_rate import candidate_rate
from bench.dedup_scale import scale

SHORT = 2.0  # seconds: the clips whose 0.5 s cuts take a quarter or more of the audio


def _root(tmp: Path, transcribe: Callable[[np.ndarray], str] | None = None,
          keep: Callable[[np.ndarray], bool] | None = None):
    """``transcribe``: each version's text from its own audio (as the asr stage would give it);
    without one, the reference text with a word dropped where audio was cut. ``keep``: whether
    the asr stage would keep a version (its language); the others are left out."""
    from common.ledger.store import Ledger
    from common.storage import open_store
    from fixtures.dedup_corpus import SR, TRANSFORMS, originals, other_speakers, trimmed_text
    from services.dedup.settings import DedupSettings
    from services.dedup.signature import SignatureWriter, signature_key
    from services.stages import PIPELINE

    s = DedupSettings(output_url=str(tmp / "out"), scratch_dir=str(tmp / "scratch"))
    ledger = Ledger(open_store(s.output_url, s), s, PIPELINE)
    truth: dict[str, str] = {}  # segment id -> origin (the look-alikes: their own)
    kinds: dict[str, str] = {}
    shards: dict[int, list] = {}
    clips = originals()
    for ci, c in enumerate(clips):
        versions = [("orig", c.audio, c.text)] + [
            (tn, f(c.audio), trimmed_text(c.text, tn)) for tn, f in TRANSFORMS.items()]
        for vi, (tn, audio, text) in enumerate(versions):
            if keep and not keep(audio):
                continue
            text = transcribe(audio) if transcribe else text
            sid = f"c{ci:03d}v{vi:02d}_0000"
            truth[sid], kinds[sid] = f"clip{ci}", "copy"
            shards.setdefault(vi, []).append((sid, text, audio))
        for oi, o in enumerate(other_speakers(c.text)):
            if keep and not keep(o.audio):
                continue
            sid = f"c{ci:03d}o{oi:02d}_0000"
            truth[sid], kinds[sid] = f"espeak{ci}-{oi}", "espeak"
            text = transcribe(o.audio) if transcribe else o.text
            shards.setdefault(100 + oi, []).append((sid, text, o.audio))
    for shard, segs in shards.items():
        w = SignatureWriter()
        for sid, text, audio in segs:
            key, _, idx = sid.rpartition("_")
            w.add(sid, key, int(idx), round(audio.size / SR, 3), text, "en", 3.0, audio, SR)
        w.write(Path(s.output_url) / signature_key(s, shard))
        ledger.mark_done("enhance", shard, {})
    return s, ledger, truth, kinds, [c.audio.size / SR for c in clips]


def accuracy(quick: bool) -> list[dict]:
    """With the reference texts, then with no text at all: what the audio keys find alone."""
    return (_accuracy("reference texts", None)
            + _accuracy("audio keys alone, every text empty", lambda audio: ""))


def _asr_cache() -> dict[str, str]:
    """Transcripts kept between runs when ONSEI_BENCH_ASR_CACHE names a JSON file (keyed by the
    audio's SHA-1 and the model): the audio and the model decide the text, so a rerun that
    changes only the matcher need not transcribe 493 clips again."""
    path = os.environ.get("ONSEI_BENCH_ASR_CACHE")
    return json.loads(Path(path).read_text()) if path and Path(path).is_file() else {}


def _save_asr_cache(cache: dict[str, str]) -> None:
    if path := os.environ.get("ONSEI_BENCH_ASR_CACHE"):
        Path(path).write_text(json.dumps(cache))


def accuracy_asr(quick: bool) -> list[dict]:
    """The same with every version's own Whisper transcript (bundled base, int8, CPU, language
    detected per clip): what the asr stage would give each copy; with and without the acoustic
    candidate keys. Skipped by --quick."""
    if quick:
        return []
    import hashlib

    from fixtures.dedup_corpus import SR
    from services.asr.settings import AsrSettings
    from services.whisper.model import load_model
    from services.whisper.settings import WhisperSettings

    model = "bundled:whisper-base"
    m = load_model(WhisperSettings(asr_model=model), device="cpu").model
    cache = _asr_cache()

    def digest(audio: np.ndarray) -> str:
        return hashlib.sha1(np.ascontiguousarray(audio, np.float32).tobytes()).hexdigest()

    def transcribe(audio: np.ndarray) -> str:
        key = f"{model}:{digest(audio)}"
        if key not in cache:
            segs, _ = m.transcribe(audio, beam_size=1, vad_filter=False)
            cache[key] = " ".join(sg.text.strip() for sg in segs)
        return cache[key]

    def kept(audio: np.ndarray) -> bool:
        """The asr stage's rules at its defaults: a language it keeps (Japanese, English) and a
        segment no shorter than its shortest (``ONSEI_ASR_SEGMENT_MIN_SECONDS``)."""
        rules = AsrSettings()
        if audio.size < rules.asr_segment_min_seconds * SR:
            return False
        key = f"{model}:lang:{digest(audio)}"
        if key not in cache:
            cache[key] = m.detect_language(audio)[0]
        return cache[key] in rules.asr_languages

    try:
        rows = _accuracy("Whisper base transcripts", transcribe)
        rows += _accuracy("Whisper base transcripts, text keys only", transcribe,
                          acoustic=False)
        rows += _accuracy("Whisper base transcripts, the versions the asr stage keeps "
                          "(language en/ja, at least 1 s)", transcribe, keep=kept)
    finally:
        _save_asr_cache(cache)
    return rows


def _accuracy(label: str, transcribe: Callable[[np.ndarray], str] | None,
              acoustic: bool = True,
              keep: Callable[[np.ndarray], bool] | None = None) -> list[dict]:
    import shutil

    from common.storage import open_store
    from fixtures.dedup_corpus import originals
    from services.dedup.result import DedupResult
    from services.dedup.run import Deduper
    from services.records import local_name

    if not shutil.which("espeak-ng") or not originals():
        return []
    with tempfile.TemporaryDirectory() as d:
        s, ledger, truth, kinds, clip_seconds = _root(Path(d), transcribe, keep)
        s = s.model_copy(update={"dedup_acoustic_keys": acoustic})
        store = open_store(s.output_url, s)
        t0 = time.process_time()
        Deduper(s, store, ledger).run()
        cpu = time.process_time() - t0
        res = DedupResult.load(store)
    assert res is not None
    cluster_of = {i: i for i in truth}
    for dup in res.duplicates.values():  # the result names corpus ids; these ids are unique
        cluster_of[local_name(dup.id)] = local_name(dup.duplicate_of)
    predicted = {frozenset(p) for p in itertools.combinations(truth, 2)
                 if cluster_of[p[0]] == cluster_of[p[1]]}
    true = {frozenset(p) for p in itertools.combinations(truth, 2)
            if truth[p[0]] == truth[p[1]]}
    tp = len(predicted & true)
    fp = predicted - true
    short = {f"clip{ci}" for ci, sec in enumerate(clip_seconds) if sec < SHORT}
    true_short = {p for p in true if truth[next(iter(p))] in short}

    def kind(p: frozenset) -> str:
        a, b = sorted(p)
        ka, kb = kinds[a], kinds[b]
        if ka == kb == "espeak":
            return "espeak_pair"
        if "espeak" in (ka, kb):
            return "real_vs_espeak"
        return "other_copy"

    fp_kinds = {k: sum(1 for p in fp if kind(p) == k)
                for k in ("real_vs_espeak", "espeak_pair", "other_copy")}
    espeak = [i for i in truth if kinds[i] == "espeak"]
    neg_real_espeak = sum(1 for i in espeak if f"{i[:4]}v00_0000" in truth)
    neg_espeak_pairs = sum(1 for a, b in itertools.combinations(espeak, 2) if a[:4] == b[:4])
    real_fp = fp_kinds["real_vs_espeak"] + fp_kinds["other_copy"]
    rows = [
        {"name": f"dedup ({label}): recall, copy pairs found ({len(true)} pairs of "
                 f"{len(clip_seconds)} real clips x 13 versions: mp3, opus, telephone 8k, gain, "
                 "noise 20 dB, trim/pad 0.5 s, "
                 "moved boundaries, combined)",
         "ours": round(tp / len(true), 4), "baseline": len(truth), "ratio": None,
         "goal": ">= 0.95 (baseline: segments)", "unit": "recall"},
        {"name": f"dedup ({label}): recall, clips of {SHORT:g} s and longer "
                 f"({len(true) - len(true_short)} pairs)",
         "ours": round(len((predicted & true) - true_short)
                       / max(1, len(true) - len(true_short)), 4),
         "baseline": None, "ratio": None, "goal": "info", "unit": "recall"},
        {"name": f"dedup ({label}): recall, clips under {SHORT:g} s ({len(true_short)} pairs: "
                 "0.5 s cut is a third of one)",
         "ours": round(len(predicted & true_short) / max(1, len(true_short)), 4),
         "baseline": None, "ratio": None, "goal": "info", "unit": "recall"},
        {"name": f"dedup ({label}): precision, real speakers (same words by espeak voices and "
                 "other words by the same reader as negatives)",
         "ours": round(tp / max(1, tp + real_fp), 4), "baseline": real_fp, "ratio": None,
         "goal": ">= 0.99 (baseline: false pairs)", "unit": "precision"},
        {"name": f"dedup ({label}): precision, all pairs incl. two espeak voices of one text (one "
                 "synthesiser: the hardest look-alike)",
         "ours": round(tp / max(1, len(predicted)), 4), "baseline": fp_kinds["espeak_pair"],
         "ratio": round(fp_kinds["espeak_pair"] / neg_espeak_pairs, 4),
         "goal": "info (baseline: espeak pairs matched; ratio: of all such pairs)",
         "unit": "precision"},
        {"name": f"dedup ({label}): same words, real reader vs espeak voice, matched "
                 f"({neg_real_espeak} pairs)",
         "ours": fp_kinds["real_vs_espeak"], "baseline": None, "ratio": None, "goal": "0",
         "unit": "pairs"},
        {"name": f"dedup ({label}): CPU seconds of `onsei dedup` over {len(truth)} segments "
                 "(index, match, confirm, cluster)",
         "ours": round(cpu, 2), "baseline": None, "ratio": None, "goal": "info",
         "unit": "CPU s"},
    ]
    return rows


def _chromaprint(audio: np.ndarray, rate: int) -> np.ndarray:
    """fpcalc's raw fingerprint (uint32 per ~0.124 s), empty when it gives none."""
    import shutil

    import soundfile as sf

    with tempfile.NamedTemporaryFile(suffix=".wav") as f:
        sf.write(f.name, audio, rate)
        out = subprocess.run([shutil.which("fpcalc") or "fpcalc", "-raw", "-length", "600",
                              f.name], check=False, capture_output=True, text=True).stdout
    for ln in out.splitlines():
        if ln.startswith("FINGERPRINT=") and ln[12:]:
            return np.array([int(x) & 0xFFFFFFFF for x in ln[12:].split(",")], np.uint32)
    return np.zeros(0, np.uint32)


def margins(quick: bool) -> list[dict]:
    """The acoustic check alone, per copy and look-alike kind: the worst bit error rate of a
    copy against its original, the best of a look-alike (the threshold must sit between);
    and chromaprint (fpcalc) in the same comparison, at its best threshold."""
    import shutil

    from fixtures.dedup_corpus import SR, TRANSFORMS, originals, other_speakers
    from services.dedup.fingerprint import FRAMES_PER_SECOND, compare, fingerprint
    from services.dedup.settings import DedupSettings

    clips = originals()
    if not clips or not shutil.which("espeak-ng"):
        return []
    s = DedupSettings()
    thr = s.dedup_max_ber
    rows = []
    makers = [("ours", lambda a: fingerprint(a, SR), FRAMES_PER_SECOND)]
    if shutil.which("fpcalc"):
        makers.append(("chromaprint", lambda a: _chromaprint(a, SR), 11025 / 1365))
    copies = {c.name: {tn: f(c.audio) for tn, f in TRANSFORMS.items()} for c in clips}
    others = {c.name: other_speakers(c.text) for c in clips}
    for label, fp, per_s in makers:
        shift = round(s.dedup_max_shift_seconds * per_s)
        ref = {c.name: fp(c.audio) for c in clips}

        def ber(a: np.ndarray, b: np.ndarray, shift: int = shift) -> float:
            return compare(a, b, shift, s.dedup_min_overlap).ber

        pos = {tn: [ber(ref[c.name], fp(copies[c.name][tn])) for c in clips]
               for tn in TRANSFORMS}
        neg = {"same words, another speaker (espeak)":
               [ber(ref[c.name], fp(o.audio)) for c in clips for o in others[c.name]],
               "other words, same speaker":
               [ber(ref[a.name], ref[b.name]) for a, b in itertools.combinations(clips, 2)
                if a.speaker == b.speaker]}
        if label == "ours":
            for tn, v in pos.items():
                rows.append({"name": f"dedup fingerprint: worst BER of a copy, {tn} "
                                     f"({len(v)} clips)", "ours": round(max(v), 3),
                             "baseline": round(float(np.mean(v)), 3), "ratio": None,
                             "goal": f"<= {thr} (baseline: mean)", "unit": "BER"})
            for k, v in neg.items():
                rows.append({"name": f"dedup fingerprint: best BER of a look-alike, {k} "
                                     f"({len(v)} pairs)", "ours": round(min(v), 3),
                             "baseline": round(float(np.mean(v)), 3), "ratio": None,
                             "goal": f"> {thr} (baseline: mean)", "unit": "BER"})
        all_pos = np.array([x for v in pos.values() for x in v])
        all_neg = np.array([x for v in neg.values() for x in v])
        best = max((float(np.mean(all_pos <= t)), -int(np.sum(all_neg <= t)), float(t))
                   for t in np.arange(0.05, 0.5, 0.01))
        empty = sum(1 for v in ref.values() if v.size == 0)
        rows.append({"name": f"dedup fingerprint: {label}, recall at its best threshold "
                             f"{best[2]:.2f} ({all_pos.size} copies, {all_neg.size} look-alikes;"
                             f" {empty} of {len(clips)} clips without a fingerprint)",
                     "ours": round(best[0], 3), "baseline": -best[1], "ratio": None,
                     "goal": "info (baseline: look-alikes matched)", "unit": "recall"})
    return rows


ROWS = [accuracy, accuracy_asr, margins, candidate_rate, scale]
