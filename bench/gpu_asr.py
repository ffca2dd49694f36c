"""GPU bench body (run by ``bench/gpu_asr.sh``): the ASR stage's real-time factor at batch sizes
8/16/32 on one GPU with the offline Whisper base, plus a plain ``WhisperModel.transcribe`` loop
on part of the same audio for reference.

Audio: long files (batching is per file: a batch of 32 windows needs >= 16 min of speech in a
file) built from seed sentences made here by espeak-ng (``.gpu_asr/seed.npz``: the GPU machine
has no espeak), with random pauses. Decoding is not timed: the stage decodes in a background
thread, and the GPU machine lacks PyAV (stubbed by the shell script).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

SR = 16000


def build_files(seed: Path, n_files: int, minutes: float) -> list[np.ndarray]:
    data = np.load(seed)
    sentences = [data[k] for k in sorted(data.files)]
    rng = np.random.default_rng(0)
    files = []
    for _ in range(n_files):
        parts, n = [], 0
        while n < minutes * 60 * SR:
            a = sentences[rng.integers(len(sentences))]
            gap = np.zeros(int(rng.uniform(0.3, 2.0) * SR), dtype=np.float32)
            parts += [a, gap]
            n += a.size + gap.size
        files.append(np.concatenate(parts).astype(np.float32))
    return files


def gpu_memory_mb() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader"],
                             check=False, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        return out
    except Exception as e:  # noqa: BLE001
        return f"n/a ({e})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", default=".gpu_asr/seed.npz")
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--batches", default="8,16,32")
    ap.add_argument("--baseline-minutes", type=float, default=5.0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    from services.asr.settings import AsrSettings
    from services.asr.stage import AsrStage

    settings = AsrSettings(asr_device=args.device)
    t0 = time.perf_counter()
    stage = AsrStage(settings)
    stage.load()
    info = stage.model_info()
    print(f"model {info} loaded in {time.perf_counter() - t0:.1f}s; GPU memory {gpu_memory_mb()}",
          flush=True)
    files = build_files(Path(args.seed), args.files, args.minutes)
    audio_s = sum(f.size for f in files) / SR
    stage.transcribe_file("warmup", files[0][: 120 * SR])
    rows = []
    for b in [int(x) for x in args.batches.split(",")]:
        stage.settings = settings.model_copy(update={"asr_batch_size": b})
        stage._local = threading.local()  # new transcribers: the new batch size
        t = time.perf_counter()
        kept = 0.0
        stage.clock.reset()
        for i, f in enumerate(files):
            kept += stage.transcribe_file(f"f{i}", f).kept
        model_s = stage.clock.seconds
        wall = time.perf_counter() - t
        row = {"batch": b, "audio_seconds": round(audio_s, 1), "wall_seconds": round(wall, 2),
               "rtf": round(wall / audio_s, 5), "x_realtime": round(audio_s / wall, 1),
               "model_seconds": round(model_s, 2), "kept_segments": int(kept),
               "gpu_memory": gpu_memory_mb()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.baseline_minutes > 0:  # the plain loop on the first minutes, same model
        clip = files[0][: int(args.baseline_minutes * 60 * SR)]
        model = stage._loaded.model
        t = time.perf_counter()
        segs, _ = model.transcribe(clip, beam_size=settings.asr_beam_size, temperature=0.0)
        list(segs)
        wall_plain = time.perf_counter() - t
        stage.settings = settings
        stage._local = threading.local()
        t = time.perf_counter()
        stage.transcribe_file("same", clip)
        wall_ours = time.perf_counter() - t
        row = {"baseline": "plain WhisperModel.transcribe", "audio_seconds": clip.size / SR,
               "plain_rtf": round(wall_plain / (clip.size / SR), 5),
               "stage_rtf": round(wall_ours / (clip.size / SR), 5),
               "ratio": round(wall_ours / wall_plain, 3)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"model": info, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
