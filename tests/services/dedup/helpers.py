"""An output root with enhanced shards as the enhance stage leaves them, for the matcher:
signature files made from real speech and its copies, and the enhance done records."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from common.ledger.store import Ledger
from common.storage import open_store
from fixtures.dedup_corpus import SR, TRANSFORMS, Clip, originals, other_speakers
from services.dedup.settings import DedupSettings
from services.dedup.signature import SignatureWriter, signature_key
from services.records import Quality
from services.stages import PIPELINE


@dataclass
class Seg:
    id: str
    text: str
    audio: np.ndarray
    ovrl: float | None = 3.0
    quality: Quality | None = None


@lru_cache(maxsize=1)
def clips() -> tuple[Clip, ...]:
    return tuple(c for c in originals() if c.speaker == "librivox")


def copy(i: int, transform: str, seg_id: str, ovrl: float | None = 3.0,
         text: str | None = None, quality: Quality | None = None) -> Seg:
    c = clips()[i]
    return Seg(seg_id, text or c.text, TRANSFORMS[transform](c.audio), ovrl, quality)


def original(i: int, seg_id: str, ovrl: float | None = 3.0,
             quality: Quality | None = None) -> Seg:
    c = clips()[i]
    return Seg(seg_id, c.text, c.audio, ovrl, quality)


def other_speaker(i: int, seg_id: str) -> Seg:
    c = clips()[i]
    return Seg(seg_id, c.text, other_speakers(c.text, ("en-us",))[0].audio, 4.5)


def settings(root: Path, tmp: Path, **over) -> DedupSettings:
    return DedupSettings(output_url=str(root), scratch_dir=str(tmp / "scratch"), **over)


def add_shard(s: DedupSettings, shard: int, segs: list[Seg]) -> None:
    """Writes the shard's signature file and its enhance done record."""
    w = SignatureWriter()
    for g in segs:
        key, _, idx = g.id.rpartition("_")
        w.add(g.id, key, int(idx), round(g.audio.size / SR, 3), g.text, "en", g.ovrl, g.audio,
              SR, quality=g.quality)
    path = Path(s.output_url) / signature_key(s, shard)
    w.write(path)
    ledger(s).mark_done("enhance", shard, {"counts": {"segments": len(segs)}})


def ledger(s: DedupSettings) -> Ledger:
    return Ledger(open_store(s.output_url, s), s, PIPELINE)


def corpus() -> dict[int, list[Seg]]:
    """Shard 0: three originals; shard 1: copies of two of them (one with a word less in its
    text) beside the same words by another speaker and other words by the same reader;
    shard 2: a noisy copy of the first, scored best."""
    return {
        0: [original(0, "a_0000", 3.1), original(1, "b_0000", 3.0), original(2, "c_0000")],
        1: [copy(0, "mp3_64k", "d_0000", 2.9),
            copy(1, "telephone_8k", "e_0000", 2.0,
                 text=" ".join(clips()[1].text.split()[1:])),
            other_speaker(2, "f_0000"), original(3, "g_0000")],
        2: [copy(0, "noise_20dB", "h_0000", 3.5)],
    }
