"""Keep an H200 fed: each stage's CPU seconds per audio hour outside the model (docs/operations.md,
"Feeding the GPU").

A realistic raw shard (bench/feed_corpus.py: minutes-long recorded speech in opus, mp3, flac and
wav at 16-48 kHz) goes through the real stages, each through the attempt engine
(common/stages/engine.py: fetch, process, publish, done record), with every model answering at
once at its real output shapes (bench/feed_fakes.py). What is left is the CPU a GPU node spends
around its models, split per part (bench/feed_meter.py), against the budget that keeps the
GPU busy: ``cores / (x real time of the model)`` = 16 / 400 (Whisper large-v3-turbo batched),
16 / 2000 (Sidon), 16 / 1000 (NeuCodec) of real time, i.e. 144 / 29 / 58 CPU s per audio hour.
Per audio hour of the stage's input: the raw files for asr, the kept segments for enhance and
tokenize. Threads: one for torch and onnxruntime (a node's cores are shared by its workers).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.feed_meter import CpuMeter, meter_resampling, process_cpu

BUDGET = {"asr": 144.0, "enhance sidon": 29.0, "enhance rnnoise": 29.0, "tokenize": 58.0}
SHARD = 1
MODEL = "model (instant)"
DEVICE = "device front-ends (on the GPU at a node)"
UNNAMED = "other (tar reading, records, glue)"


def _settings(root: Path, **extra: Any):
    from services.stages import PipelineSettings

    return PipelineSettings(input_url=str(root / "raw"), output_url=str(root / "out"),
                            scratch_dir=str(root / "scratch"), **extra)


def _meter_engine(meter: CpuMeter, engine: Any) -> None:
    """The engine's own work: done check, fetch, publish, done record (Celery's per-message
    work is not here: a worker process adds it once per shard)."""
    name = "engine/ledger (fetch, publish, done record)"
    meter.patch(engine, "fetch", name)
    meter.patch(engine.output, "put_file", name)
    meter.patch(engine.ledger, "mark_done", name)
    meter.patch(engine.ledger, "is_done", name)


def _run(stage: Any, settings: Any, meter: CpuMeter,
         warmed: Callable[[], None] | None = None) -> dict[str, Any]:
    from common.stages.engine import Engine
    from services.stages import PIPELINE

    engine = Engine(settings, PIPELINE, stage)
    _meter_engine(meter, engine)
    meter_resampling(meter)
    # A worker process imports its modules and builds its tables on its first shard, once for
    # the thousands it then serves: the shard measured is the second, as at a node.
    warm = engine.attempt(SHARD, check_done=False)
    if warm.status != "done":
        raise RuntimeError(f"{stage.name}: {warm.status}: {warm.reason}")
    meter.parts.clear()
    if warmed:
        warmed()
    cpu0 = process_cpu()
    attempt = engine.attempt(SHARD, check_done=False)
    total = process_cpu() - cpu0
    meter.restore()
    if attempt.status != "done":
        raise RuntimeError(f"{stage.name}: {attempt.status}: {attempt.reason}")
    rec = attempt.record
    seconds = rec["audio_seconds_in"] if isinstance(rec, dict) else rec.audio_seconds_in
    return {"total": total, "seconds": seconds}


def run_asr(root: Path, settings: Any) -> dict[str, Any]:
    from bench.feed_fakes import instant_asr
    from services.asr import clips, decode_ahead
    from services.asr.batched import ClipTranscriber
    from services.asr.stage import AsrStage

    stage = AsrStage(settings)
    tr = instant_asr(stage)
    m = CpuMeter()
    m.patch(decode_ahead, "iter_keys", UNNAMED, kind="iter")
    m.patch(decode_ahead, "decode_audio", "decode")
    m.patch(clips, "speech_spans", "VAD")
    m.patch(ClipTranscriber, "features", "features (Whisper log-mel)")
    for name in ("rows", "detect_language", "transcribe"):
        m.patch(type(tr), name, MODEL)
    out = _run(stage, settings, m, warmed=lambda: setattr(tr, "encoder_rows", 0))
    out["encoder_rows"] = tr.encoder_rows
    return {**out, "parts": dict(m.parts)}


def run_enhance(root: Path, settings: Any, backend: Any) -> dict[str, Any]:
    from bench.feed_fakes import instant_annotator
    from common.shards.tar import ShardWriter
    from services.dedup.signature import SignatureWriter
    from services.enhance import chunking, flow, segments, writer
    from services.enhance.quality import annotate, music, overlap, prosody, speaker
    from services.enhance.quality.mel import MelSpec
    from services.enhance.quality.vad import SileroTorch
    from services.enhance.signature_powers import DevicePowers
    from services.enhance.stage import EnhanceStage

    stage = EnhanceStage(settings)
    stage._backend = backend
    stage._annotator = instant_annotator(stage.settings)
    stage._signature_powers = DevicePowers("cpu")  # a GPU node's path, on the CPU here
    m = CpuMeter()
    m.patch(segments, "iter_keys", UNNAMED, kind="iter")
    if hasattr(segments, "decode_chunks"):  # decoded in a stream, cut as it comes
        m.patch(segments, "decode_chunks", "decode", kind="iter")
    else:
        m.patch(segments, "decode_audio", "decode")
    m.patch(segments.Conditioning, "apply", "condition (high-pass, peak)")
    cut = "cut, pack, join"
    for owner, attr in ((flow, "split_segment"), (flow, "pack_rows"), (flow, "take_batches"),
                        (chunking.SegmentAssembler, "add")):
        m.patch(owner, attr, cut)
    for owner, attr in ((segments, "pad_segment"), (getattr(segments, "RollingAudio", None),
                                                    "padded")):
        if owner is not None and hasattr(owner, attr):
            m.patch(owner, attr, cut)
    m.patch(type(backend), "prepare", "features (model input staging)")
    m.patch(type(backend), "run", MODEL)
    m.patch(writer, "flac_bytes", "encode/write (FLAC, tar)")
    m.patch(ShardWriter, "write", "encode/write (FLAC, tar)")
    m.patch(annotate.Annotator, "annotate", "annotations (other)")
    m.patch(prosody, "pitch", "annotations: pitch (pyworld)")
    m.patch(prosody, "speech_windows", "annotations: speech fraction (VAD, onnxruntime)")
    m.patch(music, "music_score", "annotations: music (held tones)")
    # found once per segment, for the edge trimming and the overlap annotation (its FFTs run on
    # the stage's device at a GPU node; counted here all the same)
    m.patch(overlap, "frames", "annotations: overlap frames (two voices)")
    m.patch(SignatureWriter, "add", "dedup signature (fingerprint, text and audio keys)")
    m.patch(DevicePowers, "__call__", DEVICE)
    m.patch(MelSpec, "__call__", DEVICE)
    m.patch(speaker, "_voiced_frames", DEVICE)
    m.patch(SileroTorch, "probs", DEVICE)
    try:
        return {**_run(stage, settings, m), "parts": dict(m.parts)}
    finally:
        m.restore()


def run_tokenize(root: Path, settings: Any) -> dict[str, Any]:
    from bench.feed_fakes import instant_codec, instant_encode_batch
    from services.tokenize import encode, flow
    from services.tokenize.loader import LoadedCodec
    from services.tokenize.stage import TokenizeStage

    stage = TokenizeStage(settings)
    stage.codec = LoadedCodec(instant_codec(), "neucodec", root, "cuda", 0, 0)
    m = CpuMeter()
    m.patch(flow, "iter_keys", UNNAMED, kind="iter")
    m.patch(flow, "read_audio_bytes", "decode")
    m.patch(encode, "prepare", "features (w2v-BERT filterbank)")
    flow_encode = flow.encode_batch
    flow.encode_batch = m.wrap(MODEL, instant_encode_batch)
    m.patch(flow, "token_line", "encode/write (JSON lines)")
    try:
        return {**_run(stage, settings, m), "parts": dict(m.parts)}
    finally:
        flow.encode_batch = flow_encode
        m.restore()


def _rows(stage: str, res: dict[str, Any]) -> list[dict]:
    hours = res["seconds"] / 3600
    parts = dict(res["parts"])
    model = parts.pop(MODEL, 0.0)
    device = parts.pop(DEVICE, 0.0)
    outside = res["total"] - model - device
    parts[UNNAMED] = outside - sum(v for k, v in parts.items() if k != UNNAMED)
    goal = BUDGET[stage]
    rows = [{"name": f"feed {stage}: CPU s per audio hour outside the model",
             "ours": round(outside / hours, 1), "baseline": None,
             "ratio": round(outside / hours / goal, 3), "goal": f"<= {goal:g} (ratio <= 1)",
             "unit": f"CPU s / audio h ({res['seconds'] / 60:.1f} min)"}]
    for name, cpu in sorted(parts.items(), key=lambda kv: -kv[1]):
        rows.append({"name": f"feed {stage}: {name}", "ours": round(cpu / hours, 1),
                     "baseline": None, "ratio": None, "goal": "part",
                     "unit": "CPU s / audio h"})
    if device:
        rows.append({"name": f"feed {stage}: {DEVICE}, not counted", "ours":
                     round(device / hours, 1), "baseline": None, "ratio": None, "goal": "info",
                     "unit": "CPU s / audio h (here)"})
    if "encoder_rows" in res:
        rows.append({"name": f"feed {stage}: encoder windows per audio hour", "ours":
                     round(res["encoder_rows"] / hours, 1), "baseline": None, "ratio": None,
                     "goal": "info", "unit": "windows / audio h"})
    return rows


def feed(quick: bool) -> list[dict]:
    import torch

    from bench.feed_corpus import make_mix

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    files, seconds = (4, 120.0) if quick else (8, 240.0)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-feed-") as d:
        root = Path(d)
        settings = _settings(root)
        make_mix(root / "raw" / settings.shard_name(SHARD), files, seconds)
        rows += _rows("asr", run_asr(root, settings))
        from bench.feed_fakes import instant_rnnoise, instant_sidon

        rows += _rows("enhance sidon", run_enhance(root, settings, instant_sidon()))
        rows += _rows("tokenize", run_tokenize(root, settings))
        rows += _rows("enhance rnnoise", run_enhance(root, settings, instant_rnnoise()))
    return rows


ROWS = [feed]
