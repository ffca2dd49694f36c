"""ASR stage vs faster-whisper's ``BatchedInferencePipeline`` (the peer a user would pick:
Silero VAD, same model, compute type, batch size, beam, temperature 0; its language ID runs
first and a file in another language is dropped; word timestamps when the stage gives them,
as it does by default) on the same long-form files.

Sets: synthetic (espeak-ng, two voices, random 0.3-2 s pauses: English, Japanese, and a share
of Spanish / German files that both must drop) and real (pocketsphinx-testdata's LibriVox and
card-reading clips joined with pauses; fillets-ng-data's recorded German lines as the share to
drop); telephone band: the real set resampled to 8 kHz and back. Both sides get the same
decoded 16 kHz arrays; rounds alternate which goes first and
the wall times are medians over rounds (the machine is shared). Goals: wall <= 0.9x, WER and
Japanese CER <= 1.0x.
Model: ``ONSEI_ASR_MODEL`` if set, else ``bundled:whisper-base`` (offline).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from fixtures.longform import (
    SR,
    LongForm,
    error_rate,
    make_longform,
    peer_transcribe,
    real_english,
    real_german,
    real_longform,
)


def _settings(tmp: Path):
    from services.asr.settings import AsrSettings

    return AsrSettings(asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
                    input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
                    scratch_dir=str(tmp / "scratch"))


def synthetic_set(quick: bool) -> list[LongForm]:
    secs = 60.0 if quick else 180.0
    n = 10 if quick else 30
    return [make_longform("en", secs, n, seed=0), make_longform("ja", secs, n, seed=0),
            make_longform("en", secs, n, seed=1), make_longform("es", secs, n, seed=0),
            make_longform("de", secs, n // 3, seed=0)][:3 if quick else 5]


def real_set(quick: bool) -> list[LongForm]:
    en = real_english()
    if not en:
        return []
    secs = 60.0 if quick else 180.0
    de = [("", a) for a in real_german()]
    files = [real_longform(en, secs, seed=0), real_longform(en, secs, seed=1)]
    if de:
        files.append(real_longform(de, secs, seed=0, language="de"))
    return files[:2] if quick else files


def telephone(files: list[LongForm]) -> list[LongForm]:
    """``files`` as a telephone line carries them: resampled to 8 kHz and back (nothing above
    4 kHz; call recordings and old broadcasts sound so)."""
    import soxr

    return [LongForm(f.language, soxr.resample(soxr.resample(f.audio, SR, 8000), 8000, SR)
                     .astype(np.float32), f.sentences, f.spans) for f in files]


def _side_by_side(stage, files: list[LongForm], rounds: int) -> dict:
    s = stage.settings
    model = stage._loaded.model
    hyp: dict[str, dict[int, str]] = {"ours": {}, "peer": {}}

    def ours() -> float:
        t0 = time.perf_counter()
        for i, f in enumerate(files):
            line = stage.transcribe_file(f"f{i}", f.audio).line
            joiner = "" if f.language == "ja" else " "
            hyp["ours"][i] = joiner.join(x.text for x in line.kept)
        return time.perf_counter() - t0

    def peer() -> float:
        t0 = time.perf_counter()
        for i, f in enumerate(files):
            hyp["peer"][i] = peer_transcribe(model, f.audio, s.asr_languages, s.asr_batch_size,
                                             s.asr_beam_size, s.asr_language_threshold,
                                             word_timestamps=s.asr_word_timestamps).text
        return time.perf_counter() - t0

    walls: dict[str, list[float]] = {"ours": [], "peer": []}
    for r in range(rounds):  # alternate who goes first: load drift hits both alike
        order = (("ours", ours), ("peer", peer)) if r % 2 == 0 else (("peer", peer), ("ours", ours))
        for name, fn in order:
            walls[name].append(fn())
    errors: dict[str, dict[str, float]] = {}
    for lang in sorted({f.language for f in files if f.language in s.asr_languages}):
        idx = [i for i, f in enumerate(files) if f.language == lang]
        ref = [files[i].reference for i in idx]
        errors[lang] = {k: statistics.fmean(error_rate(lang, r, hyp[k][i])
                                            for r, i in zip(ref, idx)) for k in hyp}
    dropped = {k: sum(1 for i, f in enumerate(files)
                      if f.language not in s.asr_languages and not hyp[k][i]) for k in hyp}
    return {"walls": walls, "errors": errors, "dropped": dropped}


def _rows(label: str, files: list[LongForm], res: dict, tag: str) -> list[dict]:
    minutes = sum(f.seconds for f in files) / 60
    langs = ", ".join(f"{f.language}" for f in files)
    other = sum(1 for f in files if f.language not in ("en", "ja"))
    ours, peer = (statistics.median(res["walls"][k]) for k in ("ours", "peer"))
    rows = [{"name": f"asr stage vs BatchedInferencePipeline, {label} ({minutes:.1f} min: "
                     f"{langs}; {tag})",
             "ours": round(ours, 2), "baseline": round(peer, 2),
             "unit": f"s wall (median of {len(res['walls']['ours'])})",
             "ratio": round(ours / peer, 3),
             "goal": f"<= 0.9 (dropped {res['dropped']['ours']}/{other} vs "
                     f"{res['dropped']['peer']}/{other})"}]
    for lang, e in res["errors"].items():
        metric = "CER" if lang == "ja" else "WER"
        rows.append({"name": f"asr {label} {lang} {metric}, stage vs BatchedInferencePipeline",
                     "ours": round(e["ours"], 4), "baseline": round(e["peer"], 4), "unit": metric,
                     "ratio": round(e["ours"] / e["peer"], 3) if e["peer"] else None,
                     "goal": "<= 1.0"})
    return rows


def stage_vs_batched_pipeline(quick: bool) -> list[dict]:
    from services.asr.stage import AsrStage

    rounds = 2 if quick else 3
    with tempfile.TemporaryDirectory(prefix="onsei-bench-asr-") as d:
        stage = AsrStage(_settings(Path(d)))
        stage.load()
        loaded = stage._loaded
        assert loaded is not None
        tag = f"{loaded.resolved.name} {loaded.compute_type} {loaded.device}"
        warm = make_longform("en", 20.0, 3, seed=9)  # first-call allocations, VAD session
        _side_by_side(stage, [warm], 1)
        rows: list[dict] = []
        real = real_set(quick)
        for label, files in (("synthetic", synthetic_set(quick)), ("real", real),
                             ("telephone 8 kHz", telephone(real))):
            if files:
                rows += _rows(label, files, _side_by_side(stage, files, rounds), tag)
    return rows


ROWS = [stage_vs_batched_pipeline]
