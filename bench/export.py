"""``onsei export`` against the copy users write by hand: per tokens line ``json.loads``, a
DNSMOS threshold, ``json.dumps`` into one file. Ours does more per line (typed records, the
whole filter policy and the duplicate list, the group split, the schema witnesses, the card),
so the row says what that costs. Synthetic tokens of a finished run on a local output root:
10 s segments with 500 codes and a quality block, ten per source file, 5 % of them listed as
duplicates. CPU seconds of this process (``time.process_time``, all threads): the machine is
shared, so wall time would measure the neighbours.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path


def _run(root: Path, shards: int, per_shard: int):
    from common.ledger.store import Ledger
    from common.storage import open_store
    from services.records import AsrLine, Quality, TokenLine
    from services.stages import PIPELINE, PipelineSettings

    s = PipelineSettings(input_url=str(root / "raw"), output_url=str(root / "out"),
                         scratch_dir=str(root / "scratch"))
    store, q = open_store(s.output_url, s), Quality.from_dict(
        {"dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": 3.1}, "multi_speaker": False,
         "speaker_consistency": 0.93})
    ledger, dups = Ledger(store, s, PIPELINE), {}
    for sid in range(shards):
        keys = [f"{sid:05d}{f:04d}" for f in range(per_shard // 10)]
        store.write_bytes(PIPELINE.output_key("asr", s, sid), "".join(
            AsrLine(key=k, language="en", status="ok").to_json() + "\n" for k in keys).encode())
        ids = [f"{keys[i // 10]}_{i % 10:04d}" for i in range(per_shard)]
        store.write_bytes(PIPELINE.output_key("tokenize", s, sid), "".join(
            TokenLine(id=i, text="a sentence of some ten words or so, as people say " * 2,
                      codes={"neu_tokens": list(range(500))}, duration_seconds=10.0,
                      quality=q).to_json() + "\n" for i in ids).encode())
        dups |= {i: ids[0] for i in ids[1::20]}
        for stage in ("asr", "enhance", "tokenize"):
            ledger.mark_done(stage, sid, {"model": stage})
    _write_dedup(store, dups, list(range(shards)))
    return s


def _write_dedup(store, dups: dict[str, str], shards: list[int]) -> None:
    """The dedup result as ``onsei dedup`` publishes it (services/dedup/result.py)."""
    import hashlib

    from services.dedup.result import DUPLICATES_KEY, SUMMARY_KEY, DedupSummary, DuplicateLine

    body = "".join(DuplicateLine(id=d, duplicate_of=k, kind="same_recording", score=1.0,
                                 seconds=10.0).to_json() + "\n" for d, k in dups.items()).encode()
    store.write_bytes(DUPLICATES_KEY, body)
    store.write_bytes(SUMMARY_KEY, DedupSummary(
        shards=shards, duplicate_segments=len(dups),
        duplicates_sha256=hashlib.sha256(body).hexdigest()).to_json().encode())


def _by_hand(s, shards: int, dest: Path) -> int:
    from services.stages import PIPELINE

    n = 0
    with open(dest, "w", encoding="utf-8") as out:
        for sid in range(shards):
            path = Path(s.output_url) / PIPELINE.output_key("tokenize", s, sid)
            for raw in path.read_text(encoding="utf-8").splitlines():
                line = json.loads(raw)
                if line["quality"]["dnsmos_after"]["ovrl"] >= 2.0:
                    out.write(json.dumps(line) + "\n")
                    n += 1
    return n


def rows(quick: bool) -> list[dict]:
    from services.ops.export.caps import Caps
    from services.ops.export.run import export
    from services.ops.export.write import SplitPlan

    shards, per_shard = (4, 500) if quick else (20, 1000)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        s = _run(root, shards, per_shard)
        c0 = time.process_time()
        n_hand = _by_hand(s, shards, root / "by-hand.jsonl")
        c1 = time.process_time()
        res = export(s, s.output_url, str(root / "set"),
                     plan=SplitPlan(validation_fraction=0.01), workers=2)
        c2 = time.process_time()
        # both caps set; the source cap (60 s of each 100 s file) binds, the lines have no voice
        capped = export(s, s.output_url, str(root / "capped"),
                        plan=SplitPlan(validation_fraction=0.01,
                                       caps=Caps(hours_per_speaker=1.0,
                                                 hours_per_source=60 / 3600)), workers=2)
        c3 = time.process_time()
    n = sum(res.written.lines.values())
    hours = n * 10.0 / 3600
    ours, base = (c2 - c1) / hours, (c1 - c0) / (n_hand * 10.0 / 3600)
    with_caps = (c3 - c2) / hours  # per hour read, as the uncapped row
    dropped = sum(capped.written.capped.segments.values())
    return [{"name": f"export: CPU s per audio hour ({n} lines of 500 codes; by hand: json "
                     f"loads/dumps, {n_hand} lines)", "ours": round(ours, 4),
             "baseline": round(base, 4), "ratio": round(ours / base, 2) if base else None,
             "goal": "<= 2x the copy by hand", "unit": "CPU s / audio h"},
            {"name": f"export with --max-hours-per-speaker/--max-hours-per-source: CPU s per "
                     f"audio hour read ({dropped} of {n} lines over the source cap; baseline: "
                     "the same export without caps)", "ours": round(with_caps, 4),
             "baseline": round(ours, 4), "ratio": round(with_caps / ours, 2) if ours else None,
             "goal": "<= 1.5x the export without caps", "unit": "CPU s / audio h"}]


ROWS = [rows]
