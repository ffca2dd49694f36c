"""A raw shard with its ASR JSONL, as the asr stage writes them (docs/architecture.md, formats)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fixtures.speechgen import make_shard, synth, wav_bytes

RATE = 16000


def asr_line(key: str, status: str, segs: list[tuple[float, float, bool]], language: str = "en",
             text: str = "hello") -> dict:
    return {
        "key": key, "language": language, "language_probability": 0.99, "status": status,
        "duration": max((e for _, e, _ in segs), default=0.0),
        "segments": [
            {"idx": i, "start": s, "end": e, "text": f"{text} {i}", "avg_logprob": -0.2,
             "no_speech_prob": 0.01, "compression_ratio": 1.2, "kept": k,
             "reason": None if k else "too_short"}
            for i, (s, e, k) in enumerate(segs)
        ],
    }


def speech(seconds: float, seed: int = 0) -> np.ndarray:
    """About ``seconds`` of espeak speech (repeated phrases), 16 kHz."""
    phrase = synth("the quick brown fox jumps over the lazy dog and runs away", "en")
    reps = int(np.ceil(seconds * RATE / phrase.size))
    x = np.concatenate([phrase] * reps)[: int(seconds * RATE)]
    rng = np.random.default_rng(seed)
    return (x + 0.003 * rng.standard_normal(x.size)).astype(np.float32)


def build_inputs(raw_dir: Path, out_dir: Path, shard_name: str = "shard-000000.tar",
                 asr_name: str = "asr/shard-000000.jsonl") -> dict:
    """Members: a (two kept + one not kept), b (dropped: garbage bytes), c (error line,
    garbage bytes), d (ok, nothing kept), e (one kept segment of 23 s, three chunks)."""
    a = speech(14.0, 1)
    e = speech(25.0, 2)
    garbage = b"\x00garbage, never decode me" * 10
    make_shard(raw_dir / shard_name, {
        "a": {"wav": wav_bytes(a), "json": b"{}"},
        "b": {"mp3": garbage},
        "c": {"flac": garbage},
        "d": {"wav": wav_bytes(speech(3.0, 3))},
        "e": {"wav": wav_bytes(e)},
    })
    lines = [
        asr_line("a", "ok", [(0.5, 4.25, True), (4.25, 4.6, False), (5.0, 13.5, True)]),
        asr_line("b", "dropped:language", [], language="de"),
        asr_line("c", "error:undecodable", []),
        asr_line("d", "ok", [(0.2, 2.0, False)]),
        asr_line("e", "ok", [(1.0, 24.0, True)], language="ja"),
    ]
    p = out_dir / asr_name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return {"kept": [("a", 0, 3.75), ("a", 2, 8.5), ("e", 0, 23.0)],
            "ok_keys": ["a", "e"]}
