"""A finished run in the formats of docs/architecture.md, for the export tests: asr lines,
tokens lines (or enhanced sidecars), done records with model versions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from common.ledger.store import Ledger
from common.settings import Settings
from common.shards.tar import ShardWriter
from common.storage import Store
from services.records import AsrLine, Quality, Sidecar, TokenLine
from services.stages import PIPELINE


def quality(ovrl: float = 3.2, multi: bool = False, cer: float | None = None) -> Quality:
    return Quality.from_dict({"dnsmos_before": {"sig": 2.0, "bak": 1.5, "ovrl": 1.6},
                              "dnsmos_after": {"sig": 3.3, "bak": 4.0, "ovrl": ovrl},
                              "multi_speaker": multi, "speaker_consistency": 0.9,
                              "fidelity_cer": cer})


@dataclass
class Seg:
    id: str
    seconds: float
    quality: Quality | None = None
    speaker: str | None = None
    forms: dict[str, str] = field(default_factory=dict)  # text_spoken & co (services/text)

    @property
    def source(self) -> str:
        return self.id.rsplit("_", 1)[0]


@dataclass
class Run:
    shards: dict[int, list[Seg]] = field(default_factory=dict)
    languages: dict[str, str] = field(default_factory=dict)  # source key -> language


def default_run(files_per_shard: int = 6, shards: int = 3) -> Run:
    """Three segments per source file; every third file Japanese; file 1 of each shard has two
    speakers, one of which (``narrator``) also speaks in file 2 (shards after the first): the
    label joins the two files of its shard (a label names a voice within its shard)."""
    run = Run()
    for sid in range(shards):
        segs = []
        for f in range(files_per_shard):
            key = f"{sid:03d}{f:03d}"
            run.languages[key] = "ja" if f % 3 == 2 else "en"
            for i in range(3):
                spk = None
                if f == 1:
                    spk = "narrator" if i == 0 else f"{key}#s1"
                if f == 2 and sid > 0:
                    spk = "narrator"
                q = None if (sid == 0 and f == 0) else quality(
                    cer=0.05 if (sid == shards - 1 and f == files_per_shard - 1) else None)
                segs.append(Seg(f"{key}_{i:04d}", 1.0 + 0.25 * i, q, spk))
        run.shards[sid] = segs
    return run


VOICES = 5


def voices_run(files: int = 8, shards: int = 4, per_file: int = 4) -> tuple[Run, dict]:
    """Each file of each shard is one voice; voice ``f % VOICES`` speaks in every shard, so a
    corpus speaker joins files across shards that share no per-file label."""
    run, labels = Run(), {}
    for sid in range(shards):
        segs, lab = [], {}
        for f in range(files):
            key = f"{sid:03d}{f:03d}"
            run.languages[key] = "en"
            for i in range(per_file):
                seg = Seg(f"{key}_{i:04d}", 1.0 + 0.1 * ((sid + f + i) % 5), quality())
                segs.append(seg)
                lab[seg.id] = (f"spk{f % VOICES:08d}", 0.9)
        run.shards[sid], labels[sid] = segs, lab
    return run, labels


def write_run(store: Store, settings: Settings, run: Run, tokens: bool = True) -> None:
    ledger = Ledger(store, settings, PIPELINE)
    for sid, segs in run.shards.items():
        keys = dict.fromkeys(s.source for s in segs)
        asr = "".join(AsrLine(key=k, language=run.languages[k], duration=30.0,
                              status="ok").to_json() + "\n" for k in keys)
        store.write_bytes(PIPELINE.output_key("asr", settings, sid), asr.encode())
        ledger.mark_done("asr", sid, {"model": "bundled:whisper-base", "version": "1.2.1"})
        _write_enhanced(store, settings, sid, segs, run)
        ledger.mark_done("enhance", sid, {"model": "sidon", "version": "0.3"})
        if tokens:
            body = "".join(_token_line(s) + "\n" for s in segs)
            store.write_bytes(PIPELINE.output_key("tokenize", settings, sid), body.encode())
            ledger.mark_done("tokenize", sid, {
                "model": "neuphonic/neucodec", "version": "0.0.4",
                "model_info": {"tokenizer": "neucodec"},
                "stats": {
                    "quality_filter": {"multi_speaker": True, "min_ovrl": 2.0, "by_reason": {}},
                    "skipped": [{"key": f"{sid:03d}999_0000", "reasons": ["dnsmos_ovrl<2"],
                                 "seconds": 2.0, "quality": None}]}})


def _token_line(s: Seg) -> str:
    extra = {"speaker_id": s.speaker} if s.speaker else {}
    return TokenLine(id=s.id, text=f"text of {s.id}", codes={"neu_tokens": [int(s.id[-1]), 1]},
                     duration_seconds=s.seconds, quality=s.quality, **extra,
                     **s.forms).to_json()


def _write_enhanced(store: Store, settings: Settings, sid: int, segs: list[Seg],
                    run: Run) -> None:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "e.tar"
        with ShardWriter(path) as w:
            for s in segs:
                extra = {"speaker_id": s.speaker} if s.speaker else {}
                meta = Sidecar(text=f"text of {s.id}", language=run.languages[s.source],
                               source_key=s.source, start=0.0, end=s.seconds,
                               duration_seconds=s.seconds, quality=s.quality, **extra,
                               **s.forms)
                w.write(s.id, {"flac": b"fLaC-not-decoded", "json": meta.to_json().encode()})
        store.put_file(path, PIPELINE.output_key("enhance", settings, sid))


def lines_of(root) -> dict[str, list[dict]]:
    """split -> its lines, parts in name order (test only where the export wrote one)."""
    out = {}
    for split in ("train", "validation", "test"):
        d = root / split
        if split == "test" and not d.is_dir():
            continue
        out[split] = [json.loads(x) for p in sorted(d.glob("*.jsonl")) if d.is_dir()
                      for x in p.read_text().splitlines()] if d.is_dir() else []
    return out
