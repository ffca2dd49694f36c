"""Enhance never pairs one member's text with another member's audio, never
drops what asr kept, and fails the shard when its output is not exactly asr's kept segments."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from common.stages.engine import Engine
from common.storage import open_store
from fixtures.speechgen import make_tar, wav_bytes
from services.asr.decode_ahead import decoded_members
from services.enhance.segments import SegmentSpec, read_plan
from services.enhance.stage import EnhanceStage
from services.enhance.verify import SegmentMismatch, check_written
from services.stages import PIPELINE, open_ledger
from tests.services.enhance.helpers import asr_line


def tone(hz: float, seconds: float = 2.0) -> np.ndarray:
    t = np.arange(int(16000 * seconds)) / 16000
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def _write_asr(out: Path, lines: list[dict]) -> None:
    (out / "asr").mkdir(parents=True, exist_ok=True)
    (out / "asr/shard-000000.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


HOSTILE = [  # what the issue reproduced, in one shard
    ("a.wav", wav_bytes(tone(220))), ("a.flac", wav_bytes(tone(880))),  # two audio members
    ("clip.take2.wav", wav_bytes(tone(330))),  # a dotted name
    ("c.wav", wav_bytes(tone(440))), ("c.wav", wav_bytes(tone(550))),  # the same member twice
    ("d.json", b"x" * 4096), ("d.wav", wav_bytes(tone(660))),  # an error member before its sample
    ("e.wav", wav_bytes(tone(770))), ("f.wav", wav_bytes(tone(990))),
    ("e.wav", wav_bytes(tone(100))),  # a key seen twice
]


def test_asr_and_enhance_take_the_same_audio(make_settings, tmp_path: Path) -> None:
    s = make_settings(enhance_backend="none", max_sidecar_bytes=1024)
    make_tar(Path(s.input_url) / "shard-000000.tar", HOSTILE)
    asr: dict[str, list] = {}
    for d in decoded_members(Path(s.input_url) / "shard-000000.tar", s):
        asr.setdefault(d.key, []).append(d)
    assert [d.error for d in asr["a"]] == ["ambiguous_audio:flac,wav"]
    assert [d.error for d in asr["c"]] == ["duplicate_member"]
    assert [d.error for d in asr["d"]] == ["member_too_large:4096>1024", None]  # sidecar's line
    assert [d.error for d in asr["e"]] == [None, "duplicate_key"]  # the first copy is used
    ok = sorted(k for k, ds in asr.items() if any(d.error is None for d in ds))
    assert ok == ["clip", "d", "e", "f"]
    # asr keeps one segment of each transcribed key: enhance must write exactly those
    _write_asr(Path(s.output_url), [asr_line(k, "ok", [(0.25, 1.75, True)]) for k in ok]
               + [asr_line(k, f"error:{asr[k][0].error}", []) for k in ("a", "c")])
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(0).record
    assert rec.counts["segments"] == 4 and rec.counts["errors"] == 0
    with tarfile.open(Path(s.output_url) / "enhanced/shard-000000.tar") as tf:
        metas = {m.name: json.load(tf.extractfile(m)) for m in tf if m.name.endswith(".json")}
        flacs = {m.name: tf.extractfile(m).read() for m in tf if m.name.endswith(".flac")}
    assert sorted(metas) == [f"{k}_0000.json" for k in ok]
    import soundfile as sf

    for k, hz in (("clip", 330), ("e", 770)):  # e: the first copy, as asr transcribed it
        audio, sr = sf.read(io.BytesIO(flacs[f"{k}_0000.flac"]), dtype="float32")
        peak = np.argmax(np.abs(np.fft.rfft(audio))) * sr / audio.size
        assert abs(peak - hz) < 5, (k, peak)


def test_enhance_refuses_a_key_asr_could_not_have_kept(make_settings, tmp_path: Path) -> None:
    """The reported case: asr's line says a was transcribed (from one of a.wav / a.flac); the
    shard fails with the reason and nothing is published or marked done."""
    s = make_settings(enhance_backend="none")
    make_tar(Path(s.input_url) / "shard-000000.tar", HOSTILE[:3])
    _write_asr(Path(s.output_url), [asr_line("a", "ok", [(0.25, 1.75, True)]),
                                    asr_line("clip", "ok", [(0.25, 1.75, True)])])
    with pytest.raises(SegmentMismatch, match=r"a_0000 \(error:ambiguous_audio:flac,wav\)"):
        Engine(s, PIPELINE, EnhanceStage(s)).run(0)
    assert list(open_store(s.output_url).list("enhanced/")) == []
    assert not open_ledger(s).is_done("enhance", 0)


def _spec(key: str, idx: int, start: float, end: float) -> SegmentSpec:
    return SegmentSpec(key, idx, start, end, "t", "en")


def test_check_written(tmp_path: Path) -> None:
    _write_asr(tmp_path, [asr_line("a", "ok", [(0.0, 1.0, True), (1.0, 2.5, True)]),
                          asr_line("b", "ok", [(0.0, 3.0, True)])])
    plan = read_plan(tmp_path / "asr/shard-000000.jsonl")
    a0, a1, b0 = _spec("a", 0, 0.0, 1.0), _spec("a", 1, 1.0, 2.5), _spec("b", 0, 0.0, 3.0)
    check_written(plan, [(a0, 1.0), (a1, 1.515), (b0, 2.99)], [])  # within 20 ms: fine
    with pytest.raises(SegmentMismatch, match=r"missing b_0000 \(error:undecodable\)"):
        check_written(plan, [(a0, 1.0), (a1, 1.5)], [{"key": "b", "reason": "error:undecodable"}])
    with pytest.raises(SegmentMismatch, match=r"duration off by > 20 ms a_0001 \(1.470s"):
        check_written(plan, [(a0, 1.0), (a1, 1.47), (b0, 3.0)], [])
    with pytest.raises(SegmentMismatch, match="not kept by asr x_0000"):
        check_written(plan, [(a0, 1.0), (a1, 1.5), (b0, 3.0), (_spec("x", 0, 0, 1), 1.0)], [])
    with pytest.raises(SegmentMismatch, match="written twice a_0000"):
        check_written(plan, [(a0, 1.0), (a0, 1.0), (a1, 1.5), (b0, 3.0)], [])
