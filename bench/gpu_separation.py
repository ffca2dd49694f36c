"""GPU cost of music separation ahead of the decode before the weights are at hand (run by
gpu_separation.sh).

Builds the released htdemucs architecture (``HTDemucs`` with its defaults, 26.9 M parameters)
with random weights on the device and runs the asr stage's own separation path
(``services.asr.separation.Separator`` / ``separate`` with every block separated) over minutes
of 16 kHz audio: per-block 44.1 kHz stereo resampling, demucs's segments with 25 % overlap, the
vocals mixed back to 16 kHz. Random weights change nothing about the cost. Reports the device
seconds per audio hour (wall, the device busy), the host CPU seconds per audio hour and the peak
device memory. ``--device cpu --minutes 1`` is a dry run here. One JSON object per line (and
``$OUT/gpu_separation.jsonl`` when set).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.gpu_report import jsonl_emitter
from fixtures.demucs_models import SMALL, SOURCES


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--small", action="store_true", help="the test suite's small model")
    a = ap.parse_args()
    import torch
    from demucs.apply import BagOfModels
    from demucs.htdemucs import HTDemucs

    from services.asr.separation import SR, Separator, separate

    emit = jsonl_emitter("gpu_separation")
    torch.manual_seed(0)
    model = HTDemucs(sources=SOURCES, **(SMALL if a.small else {}))
    sep = Separator(BagOfModels([model]).eval(), a.device)
    rng = np.random.default_rng(0)
    x = (0.1 * rng.standard_normal(int(a.minutes * 60 * SR))).astype(np.float32)
    sep.vocals(x[:SR * 10])  # warm-up: kernels, allocator
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    c0, w0 = time.process_time(), time.perf_counter()
    _, blocks = separate(x, 0.0, sep)
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    hours = x.size / SR / 3600
    emit({"name": "separation, random htdemucs" + (" (small)" if a.small else ""),
          "device": a.device, "parameters": sum(p.numel() for p in model.parameters()),
          "audio_minutes": a.minutes, "blocks": blocks,
          "wall_s_per_audio_hour": round(wall / hours, 1),
          "host_cpu_s_per_audio_hour": round(cpu / hours, 1),
          "real_time_factor": round(wall / (x.size / SR), 4),
          "peak_device_mb": round(torch.cuda.max_memory_allocated() / 2**20)
          if a.device.startswith("cuda") else None})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
