"""Duplicate detection (docs/dedup.md): precision and recall on copies of real speech, and the
index at scale.

``accuracy``: every real clip of bench/dedup_corpus.py with its 12 copies, the same words by 4
espeak-ng voices, all in one output root, through the real ``onsei dedup`` (text keys, DuckDB
candidates, fingerprint confirmation, clusters). Pairs in one cluster are the prediction; pairs
of one origin are the truth. Copies' texts are the reference with a word dropped where audio
was cut (a re-transcription differs at least that much).

``scale``: N synthetic signatures (random text keys, 0.5% planted copy pairs sharing all keys,
0.1% stock phrases shared by 10 segments each) indexed and matched in one batch in a
subprocess, for its wall and CPU time and peak memory (RSS) under the memory limit setting;
the projection to 200,000,000 segments on 16 cores assumes the time linear in N.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.dedup_rate import candidate_rate, projected_cpu_hours

SCALE_MEMORY_MB = 2048


def _root(tmp: Path, transcribe: Callable[[np.ndarray], str] | None = None,
          keep: Callable[[np.ndarray], bool] | None = None):
    """``transcribe``: each version's text from its own audio (as the asr stage would give it);
    without one, the reference text with a word dropped where audio was cut. ``keep``: whether
    the asr stage would keep a version (its language); the others are left out."""
    from bench.dedup_corpus import SR, TRANSFORMS, originals, other_speakers, trimmed_text
    from common.ledger.store import Ledger
    from common.storage import open_store
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
        w.write(Path(s.output_url) / signature_key(s.shard_stem(shard)))
        ledger.mark_done("enhance", shard, {})
    return s, ledger, truth, kinds, len(clips)


def accuracy(quick: bool) -> list[dict]:
    return _accuracy("reference texts", None)


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
        """The asr stage's language rule at its defaults (Japanese and English kept)."""
        key = f"{model}:lang:{digest(audio)}"
        if key not in cache:
            cache[key] = m.detect_language(audio)[0]
        return cache[key] in AsrSettings().languages

    try:
        rows = _accuracy("Whisper base transcripts", transcribe)
        rows += _accuracy("Whisper base transcripts, text keys only", transcribe,
                          acoustic=False)
        rows += _accuracy("Whisper base transcripts, the versions the asr stage keeps "
                          "(language en/ja)", transcribe, keep=kept)
    finally:
        _save_asr_cache(cache)
    return rows


def _accuracy(label: str, transcribe: Callable[[np.ndarray], str] | None,
              acoustic: bool = True,
              keep: Callable[[np.ndarray], bool] | None = None) -> list[dict]:
    import shutil

    from bench.dedup_corpus import originals
    from common.storage import open_store
    from services.dedup.result import DedupResult
    from services.dedup.run import Deduper

    if not shutil.which("espeak-ng") or not originals():
        return []
    with tempfile.TemporaryDirectory() as d:
        s, ledger, truth, kinds, n_clips = _root(Path(d), transcribe, keep)
        s = s.model_copy(update={"dedup_acoustic_keys": acoustic})
        store = open_store(s.output_url, s)
        t0 = time.process_time()
        Deduper(s, store, ledger).run()
        cpu = time.process_time() - t0
        res = DedupResult.load(store)
    assert res is not None
    cluster_of = {i: i for i in truth}
    for dup in res.duplicates.values():
        cluster_of[dup.id] = dup.duplicate_of
    predicted = {frozenset(p) for p in itertools.combinations(truth, 2)
                 if cluster_of[p[0]] == cluster_of[p[1]]}
    true = {frozenset(p) for p in itertools.combinations(truth, 2)
            if truth[p[0]] == truth[p[1]]}
    tp = len(predicted & true)
    fp = predicted - true

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
        {"name": f"dedup ({label}): recall, copy pairs found ({len(true)} pairs of {n_clips} "
                 "real clips x 13 versions: mp3, opus, telephone 8k, gain, noise 20 dB, "
                 "trim/pad 0.5 s, "
                 "moved boundaries, combined)",
         "ours": round(tp / len(true), 4), "baseline": len(truth), "ratio": None,
         "goal": ">= 0.95 (baseline: segments)", "unit": "recall"},
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

    from bench.dedup_corpus import SR, TRANSFORMS, originals, other_speakers
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


# --- scale ------------------------------------------------------------------------------------
def _synthetic(out: Path, n: int, per_shard: int, seed: int = 0) -> int:
    """Signature files + enhance records for ``n`` segments; returns the planted copy pairs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from common.ledger.store import Ledger
    from common.storage import open_store
    from services.dedup.landmarks import BANDS as AUDIO_BANDS
    from services.dedup.settings import DedupSettings
    from services.dedup.signature import _schema, signature_key
    from services.dedup.text import BANDS
    from services.stages import PIPELINE

    s = DedupSettings(output_url=str(out))
    ledger = Ledger(open_store(str(out), s), s, PIPELINE)
    rng = np.random.default_rng(seed)
    stock = rng.integers(-(1 << 62), 1 << 62, (n // 10_000 + 1, BANDS))
    planted = 0
    for shard, lo in enumerate(range(0, n, per_shard)):
        m = min(per_shard, n - lo)
        keys = rng.integers(-(1 << 62), 1 << 62, (m, BANDS))
        akeys = rng.integers(-(1 << 62), 1 << 62, (m, AUDIO_BANDS))
        raw = rng.integers(0, 1 << 32, (m, 60), dtype=np.uint32).astype("<u4")  # 1 s each
        fps = [r.tobytes() for r in raw]
        copies = rng.random(m) < 0.005  # a copy of the row before (same keys, same audio)
        copies[0] = False
        idx = np.flatnonzero(copies)
        keys[idx] = keys[idx - 1]
        akeys[idx] = akeys[idx - 1]
        seconds = rng.uniform(2, 15, m).astype(np.float32)
        seconds[idx] = seconds[idx - 1]
        for i in idx:
            fps[i] = fps[i - 1]
        planted += len(idx)
        phrase = rng.random(m) < 0.001
        phrase[idx] = phrase[idx - 1] = False  # planted copies keep their own keys
        keys[phrase] = stock[rng.integers(0, len(stock), int(phrase.sum()))]
        t = pa.table({
            "id": [f"s{shard}k{i}_0000" for i in range(m)], "key": [f"s{shard}k{i}"
                                                                  for i in range(m)],
            "idx": pa.array(np.zeros(m, np.int32)),
            "seconds": pa.array(seconds),
            "text": [""] * m, "language": ["en"] * m,
            "ovrl": pa.array(rng.uniform(2, 4, m).astype(np.float32)),
            "bands": pa.array(list(keys), pa.list_(pa.int64())),
            "akeys": pa.array(list(akeys), pa.list_(pa.int64())), "fp": fps,
        }, schema=_schema())
        path = out / signature_key(s.shard_stem(shard))
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, path, compression="zstd")
        ledger.mark_done("enhance", shard, {})
    return planted


def _scale_child(n: int, per_shard: int, memory_mb: int, root: str) -> None:
    import resource

    from common.storage import open_store
    from services.dedup.run import Deduper
    from services.dedup.settings import DedupSettings
    from services.stages import open_ledger

    out = Path(root) / "out"
    planted = _synthetic(out, n, per_shard)
    s = DedupSettings(output_url=str(out), scratch_dir=str(Path(root) / "scratch"),
                      dedup_memory_limit_mb=memory_mb, dedup_batch_shards=100_000,
                      dedup_confirm_workers=1)  # all its CPU in this process, for the phases
    store = open_store(str(out), s)
    t0, c0 = time.monotonic(), time.process_time()
    d = Deduper(s, store, open_ledger(s, store))
    summary = d.run()
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n": n, "wall": wall, "cpu": cpu, "rss_mb": rss, "planted": planted,
                      "found": summary.duplicate_segments,
                      "candidates": d.progress.candidates, "phases": d.progress.cpu}))


def _scale_run(n: int, memory_mb: int = SCALE_MEMORY_MB) -> dict:
    with tempfile.TemporaryDirectory() as d:
        code = ("from bench.dedup import _scale_child; "
                f"_scale_child({n}, 10000, {memory_mb}, {d!r})")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ})
        return json.loads(r.stdout.strip().splitlines()[-1])


def scale(quick: bool) -> list[dict]:
    sizes = [int(x) for x in os.environ.get(
        "ONSEI_BENCH_DEDUP_SIZES", "200000" if quick else "1000000,3000000").split(",")]
    rows = []
    last = None
    for n in sizes:
        r = _scale_run(n)
        last = r
        rows.append({"name": f"dedup scale: index + match {n:,} signatures in one batch "
                             f"(memory limit {SCALE_MEMORY_MB} MB; found/planted copies "
                             f"{r['found']}/{r['planted']})",
                     "ours": round(r["wall"], 1), "baseline": round(r["cpu"], 1),
                     "ratio": round(r["rss_mb"]), "goal": "info (baseline: CPU s; ratio: "
                     "peak RSS MB)", "unit": "wall s"})
    if last:
        ph = last["phases"]
        rows.append({"name": f"dedup scale: CPU s by phase at {last['n']:,} (read / index / "
                             "candidates / confirm / result)",
                     "ours": " / ".join(f"{ph.get(k, 0):.1f}" for k in
                                        ("read", "index", "candidates", "confirm", "result")),
                     "baseline": last["candidates"], "ratio": None,
                     "goal": "info (baseline: candidate pairs)", "unit": "CPU s"})
        # DuckDB's phases and the confirmation run on every core; reading and the result on one
        ph, k = last["phases"], 200e6 / last["n"]
        par = (ph.get("index", 0) + ph.get("candidates", 0) + ph.get("confirm", 0)) * k / 16
        par += projected_cpu_hours(quick) * 3600 / 16  # unrelated pairs of real speech
        ser = (ph.get("read", 0) + ph.get("result", 0)) * k
        rows.append({"name": "dedup scale: projected 200,000,000 segments on one 16-core "
                             f"machine (phases at {last['n']:,} scaled linearly, plus confirming "
                             "the unrelated audio-key pairs of real speech at its measured "
                             "rate; DuckDB's and the confirmation on 16 cores, the rest on one)",
                     "ours": round((par + ser) / 3600, 2), "baseline": round(par / 3600, 2),
                     "ratio": None, "goal": "< 2 h (baseline: the share on 16 cores)",
                     "unit": "hours"})
    return rows


ROWS = [accuracy, accuracy_asr, margins, candidate_rate, scale]
