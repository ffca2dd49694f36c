"""A computed annotation becomes the sidecar's ``quality`` block (services.records.Quality),
rounded as written: the shape tokenize, the report and docs/quality.md read."""

from __future__ import annotations

import json

import numpy as np

from services.enhance.quality.dnsmos import MosScore
from services.enhance.quality.records import QualityRecord
from services.records import Quality, Sidecar


def _record(**kw) -> QualityRecord:
    return QualityRecord(
        dnsmos_before=MosScore(2.01234, 1.5, 1.81234), dnsmos_after=MosScore(3.4, 3.98765, 3.1),
        speaker_embedding=np.linspace(-0.5, 0.5, 256, dtype=np.float32),
        speaker_consistency=0.912345, speaker_parts=4, multi_speaker=False, **kw)


def test_block_has_every_field_rounded() -> None:
    d = json.loads(_record().to_record().to_json())
    assert list(d) == ["dnsmos_before", "dnsmos_after", "dnsmos_delta", "speaker_consistency",
                       "speaker_parts", "multi_speaker", "fidelity_cer",
                       "restoration_changed_text", "speaker_embedding"]  # no fidelity_text
    assert d["dnsmos_before"] == {"sig": 2.012, "bak": 1.5, "ovrl": 1.812}
    assert d["dnsmos_delta"] == {"sig": 1.388, "bak": 2.488, "ovrl": 1.288}  # rounded last
    assert d["speaker_consistency"] == 0.9123 and len(d["speaker_embedding"]) == 256
    assert d["speaker_embedding"][0] == -0.5
    assert d["fidelity_cer"] is None and d["restoration_changed_text"] is None


def test_fidelity_sample_and_too_short_to_judge() -> None:
    rec = _record(fidelity_cer=0.31, fidelity_text="hullo", restoration_changed_text=True)
    rec.speaker_consistency = None
    q = rec.to_record()
    assert (q.fidelity_cer, q.fidelity_text, q.restoration_changed_text) == (0.31, "hullo", True)
    assert q.speaker_consistency is None
    assert rec.as_dict() == q.to_dict()
    side = Sidecar(text="hello", language="en", source_key="k", start=0.0, end=1.0,
                   duration_seconds=1.0, quality=q)
    assert Quality.from_dict(json.loads(side.to_json())["quality"]) == q
