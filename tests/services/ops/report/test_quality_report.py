"""`onsei report` on quality annotations: distributions from the tokens JSONL and the tokenize
done records' skipped segments, and the hours each filter removed."""

from __future__ import annotations

import base64
import json
import re

import pytest

from common.ledger.store import Ledger
from common.storage import open_store
from services.ops.report.collect import collect, to_json
from services.ops.report.render import render_html
from services.stages import PIPELINE


def _q(before: float, after: float, cons: float | None, cer: float | None = None) -> dict:
    return {"dnsmos_before": {"ovrl": before}, "dnsmos_after": {"ovrl": after},
            "speaker_consistency": cons, "multi_speaker": cons is not None and cons < 0.84,
            "fidelity_cer": cer}


def test_distributions_and_hours_per_filter(make_settings) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    lines = [{"id": f"k_{i:04d}", "text": "x", "codes": {"neu_tokens": [1]},
              "duration_seconds": 3600.0, "quality": _q(2.0, 3.0 + i / 10, 0.9, 0.05 * i)}
             for i in range(3)]
    lines.append({"id": "old_0000", "text": "x", "codes": {"neu_tokens": [1]},
                  "duration_seconds": 10.0})  # made before annotations: not counted
    store.write_bytes(f"tokens/{s.tokenize_codec}/{s.shard_stem(0)}.jsonl",
                      "".join(json.dumps(x) + "\n" for x in lines).encode())
    skipped = [{"key": "m_0000", "reasons": ["multi_speaker"], "seconds": 1800.0,
                "quality": _q(2.5, 3.1, 0.5)},
               {"key": "m_0001", "reasons": ["multi_speaker", "dnsmos_ovrl<2"], "seconds": 3600.0,
                "quality": _q(1.2, 1.5, 0.6)}]
    Ledger(store, s, PIPELINE).mark_done("tokenize", 0, {"skipped": skipped,
                                                         "audio_seconds_in": 1.0})
    data = collect(s.output_url, s)
    q = data.quality
    assert sorted(q.ovrl_after) == [1.5, 3.0, 3.1, 3.1, 3.2]
    assert len(q.ovrl_before) == 5 and len(q.consistency) == 5
    assert len(q.fidelity_cer) == 3  # the sampled ones only
    summary = to_json(data)["quality"]
    assert summary["kept_hours"] == pytest.approx(3.0)
    assert summary["skipped_hours"] == pytest.approx(1.5)
    assert summary["annotated_hours"] == pytest.approx(4.5)
    assert summary["skipped_hours_by_reason"] == {"multi_speaker": 1.5, "dnsmos_ovrl<2": 1.0}
    html = render_html(data)
    pngs = dict(re.findall(r'<img id="chart-(\w+)"[^>]*src="data:image/png;base64,([^"]+)"',
                           html))
    for cid in ("dnsmos", "speaker", "fidelity", "filters"):
        assert base64.b64decode(pngs[cid]).startswith(b"\x89PNG"), cid


def test_annotations_of_enhanced_shards_without_tokens(make_settings, tmp_path) -> None:
    """The quick start stops at tokenize without codec weights: the charts read what enhance
    wrote in its sidecars; a shard with tokens is read from them, not twice."""
    from common.shards.tar import ShardWriter
    from services.records import Sidecar

    s = make_settings()
    store = open_store(s.output_url, s)
    segs = [("a_0000", "alice", 0.1, 0.0, "ja-g2p"), ("a_0001", "alice", 0.3, 0.9, None),
            ("b-c_x_0000", "bob", None, None, None)]
    for shard in (0, 1):  # shard 1 has tokens too
        path = tmp_path / f"e{shard}.tar"
        with ShardWriter(path) as w:
            for key, spk, overlap, music, by in segs:
                q = {**_q(2.0, 3.5, 0.9), "overlap": overlap, "music": music}
                meta = Sidecar.from_dict({"text": "x", "duration_seconds": 1800.0,
                                          "speaker_id": spk, "quality": q,
                                          **({"text_spoken": "x", "text_spoken_by": by}
                                             if by else {})})
                w.write(key, {"flac": b"not decoded", "json": meta.to_json().encode()})
        store.put_file(path, PIPELINE.output_key("enhance", s, shard))
    store.write_bytes(PIPELINE.output_key("tokenize", s, 1), (json.dumps(
        {"id": "a_0000", "text": "x", "codes": {"neu_tokens": [1]}, "duration_seconds": 3600.0,
         "speaker_id": "alice", "quality": _q(2.0, 4.5, 0.8)}) + "\n").encode())
    data = collect(s.output_url, s)
    summary = to_json(data)["quality"]
    assert sorted(data.quality.ovrl_after) == [3.5, 3.5, 3.5, 4.5]
    assert summary["enhanced_hours_without_tokens"] == pytest.approx(1.5)
    assert summary["kept_hours"] == pytest.approx(1.0)
    assert summary["speaker_hours"] == {"alice@000000": 1.0, "alice@000001": 1.0,
                                        "bob@000000": 0.5}
    assert summary["mean_overlap"] == pytest.approx(0.2)
    assert summary["mean_music"] == pytest.approx(0.45)
    assert summary["text_spoken_by"] == {"": 3, "ja-g2p": 1}
    html = render_html(data)
    pngs = dict(re.findall(r'<img id="chart-(\w+)"[^>]*src="data:image/png;base64,([^"]+)"',
                           html))
    for cid in ("dnsmos", "speaker", "speaker_hours", "overlap_music", "filters"):
        assert base64.b64decode(pngs[cid]).startswith(b"\x89PNG"), cid
