"""Output roots as the enhance stage leaves them for ``onsei speakers``: speakers files of real
voices (pocketsphinx-testdata's LibriVox reader and "cards" speaker, fillets-ng's two "elk"
voices, embedded as enhance does) and the enhance done records."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from common.ledger.store import Ledger
from common.storage import open_store
from services.speakers.embeddings import EmbeddingsWriter
from services.speakers.settings import SpeakersSettings
from services.stages import PIPELINE


@lru_cache(maxsize=1)
def embeddings() -> dict[str, tuple[np.ndarray, ...]]:
    """Voice -> one Resemblyzer embedding per line (16 kHz, as enhance embeds)."""
    from fixtures.known_speakers import fillets_lines, sphinx_lines
    from services.enhance.quality.speaker import SpeakerEncoder

    enc = SpeakerEncoder()
    voices = {**sphinx_lines(), **fillets_lines()}
    return {v: tuple(s.embedding for s in enc.score(clips)) for v, clips in voices.items()}


def ledger(s: SpeakersSettings) -> Ledger:
    return Ledger(open_store(s.output_url, s), s, PIPELINE)


def add_shard(s: SpeakersSettings, shard: int, files: dict[str, list[tuple[str, int]]]) -> None:
    """``files``: source key -> its segments as (voice, line number), each voice one label
    within the file (as enhance labels a clean file of two voices)."""
    w = EmbeddingsWriter()
    for key, segs in files.items():
        labels: dict[str, int] = {}
        for j, (voice, line) in enumerate(segs):
            n = labels.setdefault(voice, len(labels))
            w.add(f"{key}_{j:04d}", f"{key}#s{n}", embeddings()[voice][line], 3)
    store = open_store(s.output_url, s)
    local = store_tmp(s) / f"{shard}.parquet"
    w.write(local)
    store.put_file(local, PIPELINE.side_output_key("enhance", "speakers", s, shard))
    ledger(s).mark_done("enhance", shard, {"counts": {"segments": len(w)}})


def store_tmp(s: SpeakersSettings):
    from pathlib import Path

    p = Path(s.scratch_dir) / "made"
    p.mkdir(parents=True, exist_ok=True)
    return p
