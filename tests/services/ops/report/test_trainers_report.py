"""`onsei report` on what trainers select by: speakers per file, segments per speaker, pitch and
speaking-rate distributions, from the tokens JSONL."""

from __future__ import annotations

import base64
import json
import re

from common.storage import open_store
from services.ops.report.collect import collect, to_json
from services.ops.report.render import render_html


def _line(i: int, sid: str | None, pitch: float | None, rate: float | None,
          unit: str = "chars/s") -> dict:
    q = {"multi_speaker": False, "speech_fraction": 0.8}
    if pitch is not None:
        q["pitch"] = {"mean": pitch, "std": 10.0}
    if rate is not None:
        q.update(speaking_rate=rate, speaking_rate_unit=unit)
    line = {"id": f"k_{i:04d}", "text": "x", "codes": {"neu_tokens": [1]},
            "duration_seconds": 2.0, "quality": q, "min_word_probability": 0.5}
    if sid is not None:
        line["speaker_id"] = sid
    return line


def test_speakers_pitch_and_rate_in_the_report(make_settings) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    lines = [_line(0, "a#s0", 110.0, 14.0), _line(1, "a#s1", 210.0, 12.0),
             _line(2, "a#s0", 115.0, 15.0), _line(3, "b#s0", 180.0, 7.5, "mora/s"),
             _line(4, None, None, None)]  # made before these fields: counted nowhere
    store.write_bytes(f"tokens/{s.tokenize_codec}/{s.shard_stem(0)}.jsonl",
                      "".join(json.dumps(x) + "\n" for x in lines).encode())
    # another pack-audio run's shard holds a file "a" too: another file, another voice
    store.write_bytes(f"tokens/{s.tokenize_codec}/{s.shard_stem(1)}.jsonl",
                      (json.dumps(_line(0, "a#s0", None, None)) + "\n").encode())
    data = collect(s.output_url, s)
    t = data.trainers
    assert t.segments_per_speaker == {"a#s0@000000": 2, "a#s1@000000": 1, "b#s0@000000": 1,
                                      "a#s0@000001": 1}
    assert t.speakers_per_file() == {("a", 0): 2, ("b", 0): 1, ("a", 1): 1}
    assert sorted(t.pitch_mean) == [110.0, 115.0, 180.0, 210.0]
    assert t.rates == {"chars/s": [14.0, 12.0, 15.0], "mora/s": [7.5]}
    summary = to_json(data)["trainers"]
    assert summary["files_labelled"] == 3 and summary["speakers"] == 4
    assert summary["files_by_speakers"] == {1: 2, 2: 1}
    assert summary["median_speaking_rate"] == {"chars/s": 14.0, "mora/s": 7.5}
    html = render_html(data)
    pngs = dict(re.findall(r'<img id="chart-(\w+)"[^>]*src="data:image/png;base64,([^"]+)"',
                           html))
    for cid in ("speakers_per_file", "segments_per_speaker", "pitch", "speaking_rate"):
        assert base64.b64decode(pngs[cid]).startswith(b"\x89PNG"), cid


def test_an_empty_run_still_renders(make_settings) -> None:
    s = make_settings()
    data = collect(s.output_url, s)
    assert to_json(data)["trainers"]["speakers"] == 0
    assert 'id="chart-speakers_per_file"' in render_html(data)


def test_the_quick_start_charts_from_the_sidecars(make_settings, tmp_path, monkeypatch) -> None:
    """No tokens (the README's quick start has no codec weights): `onsei report` reads the
    speakers, pitch and speaking rate that enhance wrote in its sidecars, never "no data"."""
    from click.testing import CliRunner

    from common.shards.tar import ShardWriter
    from services.ops.cli import cli
    from services.ops.report.charts import chart
    from services.records import Sidecar
    from services.stages import PIPELINE

    s = make_settings()
    path = tmp_path / "e.tar"
    with ShardWriter(path) as w:
        for i, row in enumerate(_line(i, sid, p, r) for i, (sid, p, r) in enumerate(
                [("a#s0", 110.0, 14.0), ("a#s1", 210.0, 12.0), ("b#s0", 180.0, 13.0)])):
            meta = Sidecar.from_dict({k: v for k, v in row.items() if k not in ("id", "codes")})
            w.write(f"{row['id'][:-5]}{i}_0000", {"flac": b"not decoded",
                                                   "json": meta.to_json().encode()})
    open_store(s.output_url, s).put_file(path, PIPELINE.output_key("enhance", s, 0))
    monkeypatch.setenv("ONSEI_OUTPUT_URL", s.output_url)
    monkeypatch.setenv("ONSEI_SCRATCH_DIR", s.scratch_dir)
    html = tmp_path / "report.html"
    res = CliRunner().invoke(cli, ["report", "--json", "--html", str(html)])
    assert res.exit_code == 0, res.output
    t = json.loads(res.stdout)["trainers"]
    assert t["speakers"] == 3 and t["files_labelled"] == 2 and t["median_pitch_hz"] == 180.0
    assert t["median_speaking_rate"] == {"chars/s": 13.0}
    pngs = dict(re.findall(r'<img id="chart-(\w+)"[^>]*src="data:image/png;base64,([^"]+)"',
                           html.read_text()))
    titles = {"speakers_per_file": "Speakers per source file",
              "segments_per_speaker": "Segments per speaker",
              "pitch": "Pitch (mean f0 per segment)", "speaking_rate": "Speaking rate"}
    for cid, title in titles.items():
        assert pngs[cid] != chart(title, None), cid  # the "no data" face of that chart
