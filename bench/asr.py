"""ASR stage vs a plain loop calling ``WhisperModel.transcribe`` (same model, compute type, beam,
temperature 0) over the same files: wall-time ratio, goal <= 0.8x.

Input: espeak-ng English speech, files of ~60 s with natural pauses (~5 minutes; quick: ~1).
Model: ``ONSEI_ASR_MODEL`` if set, else ``bundled:whisper-base`` (offline).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np


def make_files(total_seconds: float, file_seconds: float = 60.0, seed: int = 0) -> list[bytes]:
    from bench.speech_corpus import EN_SENTENCES
    from bench.speechgen import silence, synth, wav_bytes

    rng = random.Random(seed)
    cache = {s: synth(s) for s in EN_SENTENCES}
    files: list[bytes] = []
    done = 0.0
    while done < total_seconds:
        parts: list[np.ndarray] = [silence(rng.uniform(0.2, 1.0))]
        length = 0.0
        while length < file_seconds:
            a = cache[rng.choice(EN_SENTENCES)]
            parts += [a, silence(rng.uniform(0.3, 2.0))]
            length += a.size / 16000 + 1.0
        audio = np.concatenate(parts)
        files.append(wav_bytes(audio, 16000))
        done += audio.size / 16000
    return files


def _settings(tmp: Path):
    from common.settings import Settings

    return Settings(asr_model=os.environ.get("ONSEI_ASR_MODEL", "bundled:whisper-base"),
                    input_url=str(tmp / "raw"), output_url=str(tmp / "out"),
                    scratch_dir=str(tmp / "scratch"))


def stage_vs_plain_loop(quick: bool) -> list[dict]:
    from bench.speechgen import make_shard
    from common.audio import decode_audio
    from services.asr.stage import AsrStage

    total = 60.0 if quick else 300.0
    files = make_files(total)
    audio_seconds = sum(len(decode_audio(b, 16000)) for b in files) / 16000
    with tempfile.TemporaryDirectory(prefix="onsei-bench-asr-") as d:
        tmp = Path(d)
        settings = _settings(tmp)
        stage = AsrStage(settings)
        stage.load()
        loaded = stage._loaded
        assert loaded is not None
        model = loaded.model
        shard = make_shard(tmp / "shard.tar", {f"f{i:03d}": {"wav": b} for i, b in enumerate(files)})
        # Warm-up both paths on a little audio (first-call allocations, VAD session).
        warm = decode_audio(files[0], 16000)[: 16000 * 10]
        list(model.transcribe(warm, beam_size=settings.asr_beam_size, temperature=0.0)[0])
        stage.transcribe_file("warm", warm)

        def plain_loop() -> float:
            t0 = time.perf_counter()
            for b in files:  # decode, transcribe, consume the segments
                audio = decode_audio(b, 16000)
                segments, _info = model.transcribe(audio, beam_size=settings.asr_beam_size,
                                                   temperature=0.0)
                list(segments)
            return time.perf_counter() - t0

        def our_stage(n: int) -> tuple[float, object]:
            work = tmp / f"work{n}"
            work.mkdir()
            t0 = time.perf_counter()
            res = stage.process(0, {"shard": shard}, work)
            return time.perf_counter() - t0, res

        # A-B-B-A on a shared machine: load drift hits both sides alike.
        baseline = plain_loop()
        ours, result = our_stage(1)
        ours2, _ = our_stage(2)
        baseline += plain_loop()
        ours += ours2
    tag = f"{loaded.resolved.name} {loaded.compute_type} {loaded.device}"
    return [
        {"name": f"asr stage vs plain transcribe loop ({audio_seconds / 60:.1f} min, {tag})",
         "ours": round(ours, 2), "baseline": round(baseline, 2), "unit": "s wall (x2, ABBA)",
         "ratio": round(ours / baseline, 3), "goal": "<= 0.8"},
        {"name": "asr stage real-time factor (wall / audio)",
         "ours": round(ours / 2 / audio_seconds, 4),
         "baseline": round(baseline / 2 / audio_seconds, 4), "unit": "x",
         "ratio": round(ours / baseline, 3), "goal": f"kept {result.counts.get('kept_segments')} segs"},
    ]


ROWS = [stage_vs_plain_loop]
