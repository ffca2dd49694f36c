"""GPU speed of Sidon-sized restoration before the weights are at hand (run by gpu_enhance.sh).

Builds modules of Sidon's real sizes with random weights: the w2v-BERT 2.0 encoder
(``Wav2Vec2BertModel(Wav2Vec2BertConfig())``, ~580 M parameters, traced like Sidon's feature
extractor) and a HiFi-GAN-like decoder of ~50 M parameters (1024 -> 960 samples per frame),
saves them as ``feature_extractor_<dev>.pt`` / ``decoder_<dev>.pt`` and loads them through our
real loader, then measures:

* model throughput of fixed [B, 11 s] rows (10 s chunk + 2 x 0.5 s context) for each B;
* the whole engine (packing, cutting, joining, filterbank on the device) on a 1-30 s mix.

Random weights change nothing about the cost. ``--tiny`` shrinks everything for a CPU dry run.
Prints one JSON object per line (and writes them to ``$OUT/gpu_enhance.jsonl`` when set).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.gpu_report import jsonl_emitter


def build_decoder(cin: int, ch: int, rates: tuple[int, ...] = (8, 5, 4, 3, 2), res: int = 3):
    import torch
    from torch import nn

    class Res(nn.Module):
        def __init__(self, c: int, dilation: int) -> None:
            super().__init__()
            self.a = nn.Conv1d(c, c, 3, padding=dilation, dilation=dilation)
            self.b = nn.Conv1d(c, c, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            act = nn.functional.leaky_relu
            return x + self.b(act(self.a(act(x, 0.1)), 0.1))

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pre = nn.Conv1d(cin, ch, 7, padding=3)
            stages = []
            c = ch
            for r in rates:  # exact upsampling by r: L_out = L * r
                up = nn.ConvTranspose1d(c, c // 2, 2 * r, stride=r, padding=r // 2 + r % 2,
                                        output_padding=r % 2)
                c //= 2
                stages.append(nn.Sequential(up, *[Res(c, 3 ** i) for i in range(res)]))
            self.stages = nn.Sequential(*stages)
            self.post = nn.Conv1d(c, 1, 7, padding=3)

        def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, cin, T) -> (B, 1, 960 T)
            return torch.tanh(self.post(nn.functional.leaky_relu(self.stages(self.pre(h)), 0.1)))

    return Decoder()


def build_pair(directory: Path, device: str, tiny: bool, layers: int = 24) -> dict:
    import torch
    from torch import nn
    from transformers import Wav2Vec2BertConfig, Wav2Vec2BertModel

    dev = "cuda" if device.startswith("cuda") else "cpu"
    cfg = (Wav2Vec2BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=128, output_hidden_size=64)
           if tiny else Wav2Vec2BertConfig(num_hidden_layers=layers))

    class FE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = Wav2Vec2BertModel(cfg)

        def forward(self, input_features: torch.Tensor) -> dict[str, torch.Tensor]:
            return {"last_hidden_state": self.m(input_features).last_hidden_state}

    with torch.device(device):
        fe = FE().eval()
        dec = build_decoder(cfg.hidden_size, 64 if tiny else 1536).eval()
        example = torch.randn(1, 550, 160)
        with torch.no_grad():
            fe_ts = torch.jit.trace(fe, example, strict=False, check_trace=False)
        dec_ts = torch.jit.script(dec)
    torch.jit.save(fe_ts, str(directory / f"feature_extractor_{dev}.pt"))
    torch.jit.save(dec_ts, str(directory / f"decoder_{dev}.pt"))
    n = lambda m: sum(p.numel() for p in m.parameters())
    return {"encoder_params_M": round(n(fe) / 1e6, 1), "decoder_params_M": round(n(dec) / 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", default="8,16,32,64")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--e2e-seconds", type=float, default=1800.0, help="audio in the engine run")
    ap.add_argument("--e2e-batch", type=int, default=32)
    ap.add_argument("--budget", type=float, default=480.0, help="stop starting work after this")
    ap.add_argument("--layers", type=int, default=24,
                    help="encoder layers: 24 = all of w2v-BERT 2.0 (conservative); Sidon's "
                         "795 MB extractor suggests ~200 M parameters, i.e. about 8")
    ap.add_argument("--tiny", action="store_true", help="tiny modules: CPU dry run")
    args = ap.parse_args()
    t_start = time.monotonic()
    emit = jsonl_emitter("gpu_enhance")

    import torch

    from services.enhance.chunking import ChunkGeometry, pad_segment
    from services.enhance.flow import Enhancer
    from services.enhance.segments import CutSegment, SegmentSpec
    from services.enhance.settings import EnhanceSettings
    from services.enhance.sidon import SidonBackend

    cuda = args.device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with tempfile.TemporaryDirectory(prefix="onsei-gpu-sidon-") as d:
        t0 = time.monotonic()
        sizes = build_pair(Path(d), args.device, args.tiny, args.layers)
        emit({"event": "built", **sizes, "seconds": round(time.monotonic() - t0, 1),
              "device": torch.cuda.get_device_name() if cuda else "cpu"})
        backend = SidonBackend(EnhanceSettings(enhance_sidon_model=d, enhance_device=args.device))
        t0 = time.monotonic()
        backend.load()
        emit({"event": "loaded", "seconds": round(time.monotonic() - t0, 1)})
        geom = ChunkGeometry.from_seconds(16000, 10.0, 0.5, 0.04, 320)
        rng = np.random.default_rng(0)
        for b in [int(x) for x in args.batches.split(",")]:
            if time.monotonic() - t_start > args.budget:
                emit({"event": "skipped", "batch": b, "reason": "time budget"})
                continue
            rows = (0.1 * rng.standard_normal((b, geom.window))).astype(np.float32)
            try:
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                for _ in range(2):  # TorchScript's profiling executor optimises on run 2
                    backend.run(backend.prepare(rows))
                sync()
                t0 = time.monotonic()
                for _ in range(args.iters):
                    backend.run(backend.prepare(rows))
                sync()
                wall = (time.monotonic() - t0) / args.iters
            except (torch.cuda.OutOfMemoryError, RuntimeError) as e:
                emit({"event": "batch", "batch": b, "error": str(e)[:200]})
                break
            audio = b * geom.chunk / 16000  # seconds kept per batch
            emit({"event": "batch", "batch": b, "seconds_per_batch": round(wall, 4),
                  "rtf": round(wall / audio, 5), "x_realtime": round(audio / wall, 1),
                  "chunks_per_s": round(b / wall, 1),
                  "peak_mem_GB": (round(torch.cuda.max_memory_allocated() / 2**30, 2)
                                  if cuda else None)})
        if time.monotonic() - t_start < args.budget:
            lengths, total = [], 0.0
            while total < args.e2e_seconds:
                s = float(rng.uniform(1.0, 30.0))
                lengths.append(int(s * 16000))
                total += s
            segs = (CutSegment(i, SegmentSpec("k", i, 0.0, n / 16000, "", None), n,
                               pad_segment((0.1 * rng.standard_normal(n)).astype(np.float32),
                                           0, n, geom.margin))
                    for i, n in enumerate(lengths))
            eng = Enhancer(backend, geom, args.e2e_batch, rounds=4)
            t0 = time.monotonic()
            n_out = sum(1 for _ in eng.run(segs))
            wall = time.monotonic() - t0
            emit({"event": "engine", "batch": args.e2e_batch, "segments": n_out,
                  "audio_seconds": round(total, 1), "wall": round(wall, 2),
                  "x_realtime": round(total / wall, 1),
                  "model_busy": round(eng.clock.seconds / wall, 3),
                  "padded_fraction": round(eng.stats.padded_fraction, 4),
                  "overhead_fraction": round(eng.stats.overhead_fraction, 4)})
    emit({"event": "done", "seconds": round(time.monotonic() - t_start, 1)})


if __name__ == "__main__":
    main()
