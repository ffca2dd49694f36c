"""Synthetic stage outputs and ledger records in the formats of docs/architecture.md (for report
tests)."""

from __future__ import annotations

import json
from pathlib import Path

from common.ledger.store import Ledger
from common.settings import Settings
from common.storage import open_store
from services.stages import PIPELINE


def write_run(settings: Settings, shards: int = 3, files_per_shard: int = 4) -> dict:
    """Write asr jsonl, tokens jsonl and done/failure records; return the expected totals."""
    store = open_store(settings.output_url, settings)
    ledger = Ledger(store, settings, PIPELINE)
    totals = {"files": 0, "ok": 0, "kept_segments": 0, "token_lines": 0, "kept_seconds": 0.0}
    for sid in range(shards):
        stem = settings.shard_stem(sid)
        lines, tokens = [], []
        for f in range(files_per_shard):
            key = f"{sid:04d}{f:04d}"
            totals["files"] += 1
            if f == files_per_shard - 1:
                lines.append({"key": key, "language": "fr", "language_probability": 0.9,
                              "duration": 12.0, "status": "dropped:language", "segments": []})
                continue
            if f == 0 and sid == 0:
                lines.append({"key": key, "language": None, "language_probability": 0.0,
                              "duration": 0.0, "status": "error:undecodable", "segments": []})
                continue
            totals["ok"] += 1
            lang = "ja" if f % 2 else "en"
            segs = []
            for i in range(3):
                kept = i != 2
                start, end = i * 5.0, i * 5.0 + 2.0 + i
                segs.append({"idx": i, "start": start, "end": end, "text": "テスト <b>x</b>",
                             "avg_logprob": -0.3, "no_speech_prob": 0.1,
                             "compression_ratio": 1.2, "kept": kept,
                             "reason": None if kept else "low_logprob"})
                if kept:
                    totals["kept_segments"] += 1
                    totals["kept_seconds"] += end - start
                    tokens.append({"id": f"{key}_{i:04d}", "text": "x",
                                   "codes": {"neu_tokens": [1, 2, 3]},
                                   "duration_seconds": end - start})
            lines.append({"key": key, "language": lang, "language_probability": 0.97,
                          "duration": 15.0, "status": "ok", "segments": segs})
        store.write_bytes(f"asr/{stem}.jsonl",
                          "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode())
        store.write_bytes(f"tokens/{settings.tokenize_codec}/{stem}.jsonl",
                          "".join(json.dumps(x) + "\n" for x in tokens).encode())
        totals["token_lines"] += len(tokens)
        for n, stage in enumerate(("asr", "enhance", "tokenize")):
            ledger.mark_done(stage, sid, {"counts": {"files": files_per_shard},
                                          "audio_seconds_in": 60.0, "audio_seconds_out": 30.0,
                                          "wall_seconds": 2.0 + sid + n, "model": f"m-{stage}"})
    ledger.mark_failed("enhance", shards, "RuntimeError: boom <script>", attempts=3, dead=True)
    return totals


def write_garbage(settings: Settings) -> None:
    """A damaged output: a half line in an asr jsonl."""
    store = open_store(settings.output_url, settings)
    store.write_bytes("asr/shard-000099.jsonl", b'{"key": "a", "status": "ok"}\n{"key": "b", "sta')


def html_path(tmp: Path) -> Path:
    return tmp / "report" / "report.html"
