"""GPU speed of NeuCodec encoding before the weights are at hand (run by gpu_tokenize.sh).

Builds the real ``NeuCodec`` class at full size (w2v-BERT 2.0 with 24 layers, trimmed to the 16
the codec reads, as our loader does) with random weights: the same compute as the released
model. For each batch size B it encodes B segments of ``--seconds`` through our batched
encoder (policies ``exact``, ``stitched``, ``padded``) and, at B=1, through the library's
``encode_code``; it reports the real-time factor (model wall / audio seconds) and audio seconds per
second, and the CPU time of the per-segment feature extraction (done in the reader thread in the
stage). ``--tiny`` builds the small test model instead, for a CPU dry run of this script's logic.
Prints one JSON object per line (and writes them to ``$OUT/gpu_tokenize.jsonl`` when set).
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np

from bench.gpu_report import jsonl_emitter


def build(variant_full: bool, device: str):
    import neucodec.model as nm
    import torch
    from transformers import AutoConfig, AutoModel, SeamlessM4TFeatureExtractor

    from services.tokenize.known_configs import known_semantic_config
    from services.tokenize.loader import trim_semantic_layers

    cfg = dict(known_semantic_config("neucodec"))
    if not variant_full:
        cfg.update(num_hidden_layers=17, intermediate_size=64)
    sem = AutoConfig.for_model(**cfg)

    class Sem:
        @staticmethod
        def from_pretrained(_n, **kw):
            for k, v in kw.items():
                setattr(sem, k, v)
            return AutoModel.from_config(sem)

    class Fe:
        @staticmethod
        def from_pretrained(_n, **_kw):
            return SeamlessM4TFeatureExtractor(padding_value=1.0)

    torch.manual_seed(0)
    with mock.patch.object(nm, "Wav2Vec2BertModel", Sem), \
            mock.patch.object(nm, "AutoFeatureExtractor", Fe), torch.device(device):
        model = nm.NeuCodec(24_000, 480)
    trim_semantic_layers(model, "neucodec")
    return model.to(device).eval()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--policies", default="exact,stitched,padded")
    ap.add_argument("--budget", type=float, default=480.0)
    a = ap.parse_args()
    import torch

    from services.tokenize.encode import encode_batch, prepare

    t_start = time.monotonic()
    emit = jsonl_emitter("gpu_tokenize")

    def sync() -> None:
        if a.device.startswith("cuda"):
            torch.cuda.synchronize()

    t0 = time.monotonic()
    model = build(not a.tiny, a.device)
    emit({"event": "built", "seconds": round(time.monotonic() - t0, 1),
          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
          "device": a.device, "gpu": torch.cuda.get_device_name() if a.device == "cuda" else None})
    rng = np.random.default_rng(0)
    n = int(a.seconds * 16000)
    # lengths within 1 % of each other: what length bucketing hands the model
    audio = [(0.1 * rng.standard_normal(n - int(rng.integers(0, n // 100 + 1))))
             .astype(np.float32) for _ in range(max(int(b) for b in a.batches.split(",")))]
    t0 = time.monotonic()
    items = [prepare(model, "neucodec", x) for x in audio]
    emit({"event": "features_cpu", "per_segment_ms": round(1000 * (time.monotonic() - t0)
                                                           / len(items), 1)})
    with torch.inference_mode():
        encode_batch(model, items[:1], "exact")  # warm-up (cuDNN autotune, allocator)
    sync()
    for policy in ["library"] + a.policies.split(","):
        for b in ([1] if policy == "library" else [int(x) for x in a.batches.split(",")]):
            if time.monotonic() - t_start > a.budget:
                emit({"event": "budget_reached", "policy": policy, "batch": b})
                return
            batch = items[:b]
            try:
                sync()
                t0 = time.perf_counter()
                for _ in range(a.iters):
                    encode_batch(model, batch, policy)
                sync()
                wall = (time.perf_counter() - t0) / a.iters
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
                emit({"policy": policy, "batch": b, "error": "out_of_memory"})
                continue
            secs = sum(it.length for it in batch) / 16000
            mem = torch.cuda.max_memory_allocated() / 2**30 if a.device == "cuda" else None
            emit({"policy": policy, "batch": b, "segment_s": a.seconds,
                  "rtf": round(wall / secs, 5), "audio_s_per_s": round(secs / wall, 1),
                  "wall_s": round(wall, 4), "max_mem_gib": mem and round(mem, 2)})


if __name__ == "__main__":
    main()
