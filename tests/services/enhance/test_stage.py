"""The enhance stage end to end on a real shard + ASR JSONL, through the executor (local stores)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import services.enhance.segments as segments_mod
from common.shards.audio import resample
from common.stages.engine import Engine
from fixtures.factories.sidon import build_small_sidon
from fixtures.speechgen import make_shard, wav_bytes
from services.enhance.stage import EnhanceStage
from services.stages import PIPELINE
from tests.services.enhance.helpers import asr_line, build_inputs, speech
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    base = tmp_path_factory.mktemp("enh")
    expected = build_inputs(base / "raw", base / "out")
    model = build_small_sidon(base / "sidon")
    return base, expected, model


def read_tar(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf]


def run_stage(make_settings, base: Path, tmp_path: Path, **over):
    out = tmp_path / "out"
    shutil.copytree(base / "out", out)
    s = make_settings(input_url=str(base / "raw"), output_url=str(out), enhance_device="cpu",
                      enhance_batch_size=4, **over)
    return s, out, Engine(s, PIPELINE, EnhanceStage(s)).run(0).record


@pytest.mark.parametrize("enhancer", ["sidon", "rnnoise", "none"])
def test_stage_writes_kept_segments_only(prepared, make_settings, tmp_path, monkeypatch,
                                         enhancer: str) -> None:
    base, expected, model = prepared
    decoded: list[int] = []
    real = segments_mod.decode_chunks

    def spy(data: bytes, *a, **k):
        decoded.append(len(data))
        return real(data, *a, **k)

    monkeypatch.setattr(segments_mod, "decode_chunks", spy)
    _s, out, rec = run_stage(make_settings, base, tmp_path, enhance_backend=enhancer,
                            enhance_sidon_model=str(model))
    # Dropped (b), errored (c) and nothing-kept (d) members are never decoded: their garbage
    # bytes would have been an error record.
    assert len(decoded) == 2
    assert rec.counts["members_decoded"] == 2 and rec.counts["errors"] == 0
    assert rec.counts["segments"] == 3 and rec.counts["members_skipped"] == 3
    assert rec.model_info["enhancer"] == enhancer and rec.model == enhancer
    assert 0.0 <= rec.stat("padded_fraction") < 1.0

    members = read_tar(out / "enhanced/shard-000000.tar")
    names = [n for n, _ in members]
    assert names == ["a_0000.flac", "a_0000.json", "a_0002.flac", "a_0002.json",
                     "e_0000.flac", "e_0000.json"]
    total = 0.0
    for (key, idx, seconds), (fname, flac), (_, meta_b) in zip(
            expected["kept"], members[0::2], members[1::2]):
        audio, sr = sf.read(io.BytesIO(flac), dtype="float32")
        assert sr == 24000 and audio.ndim == 1
        assert abs(audio.size / sr - seconds) <= 0.02
        assert np.isfinite(audio).all() and np.abs(audio).max() > 1e-3
        meta = json.loads(meta_b)
        assert meta["source_key"] == key and meta["text"] == f"hello {idx}"
        assert meta["language"] == ("ja" if key == "e" else "en")
        assert abs(meta["duration_seconds"] - seconds) <= 0.02
        assert meta["end"] - meta["start"] == pytest.approx(seconds, abs=1e-3)
        total += audio.size / sr
    assert rec.audio_seconds_out == pytest.approx(total, abs=0.01)


def test_none_backend_cuts_the_right_audio(prepared, make_settings, tmp_path) -> None:
    base, _, _model = prepared
    _, out, _ = run_stage(make_settings, base, tmp_path, enhance_backend="none")
    members = dict(read_tar(out / "enhanced/shard-000000.tar"))
    got, _ = sf.read(io.BytesIO(members["a_0002.flac"]), dtype="float32")
    src = resample(speech(14.0, 1), 16000, 24000)[int(5.0 * 24000):int(13.5 * 24000)]
    n = min(got.size, src.size)
    corr = np.corrcoef(got[:n], src[:n])[0, 1]
    assert corr > 0.99, corr


def test_member_left_in_the_tar_gives_the_same_output(prepared, make_settings, tmp_path,
                                                     monkeypatch) -> None:
    """A large member is decoded from the shard file (never held as bytes): same tar."""
    base, _, _model = prepared
    _, out, _ = run_stage(make_settings, base, tmp_path / "held", enhance_backend="none")
    held = read_tar(out / "enhanced/shard-000000.tar")
    kinds: list[str] = []
    real = segments_mod.decode_chunks

    def spy(data, *a, **k):
        kinds.append(type(data).__name__)
        return real(data, *a, **k)

    monkeypatch.setattr(segments_mod, "LEAVE_IN_TAR_BYTES", 1)
    monkeypatch.setattr(segments_mod, "decode_chunks", spy)
    _, out, rec = run_stage(make_settings, base, tmp_path / "left", enhance_backend="none")
    assert kinds == ["MemberSlice", "MemberSlice"] and rec.counts["errors"] == 0
    assert read_tar(out / "enhanced/shard-000000.tar") == held


def test_bad_members_fail_the_shard_with_every_reason(make_settings, tmp_path) -> None:
    """Members asr kept but enhance cannot write: the shard fails, naming each one, and nothing
    is published or marked done (never done with holes)."""
    from common.storage import open_store
    from services.enhance.verify import SegmentMismatch
    from services.stages import open_ledger

    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000007.tar", {
        "good": {"wav": wav_bytes(speech(4.0))},
        "broken": {"flac": b"not audio at all" * 20},
        "noaudio": {"json": b"{}"},
    })
    lines = [asr_line("good", "ok", [(0.0, 1.5, True), (2.0, 3.9, True)]),
             asr_line("broken", "ok", [(0.0, 2.0, True)]),
             asr_line("noaudio", "ok", [(0.0, 2.0, True)]),
             asr_line("missing", "ok", [(0.0, 2.0, True)])]
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000007.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines) + "{not json\n")
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="none")
    with pytest.raises(SegmentMismatch) as ei:
        Engine(s, PIPELINE, EnhanceStage(s)).run(7)
    msg = str(ei.value)
    assert msg.startswith("enhance wrote 2 segments, asr kept 5: missing ")
    for part in ("broken_0000 (error:", "noaudio_0000 (error:no_audio)",
                 "missing_0000 (missing_member)", "asr_line_5_malformed"):
        assert part in msg, msg
    assert list(open_store(s.output_url).list("enhanced/")) == []
    assert not open_ledger(s).is_done("enhance", 7)


def test_shard_with_nothing_kept_gives_an_empty_tar(make_settings, tmp_path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000003.tar", {"x": {"wav": wav_bytes(speech(2.0))}})
    (out / "asr").mkdir(parents=True)
    (out / "asr/shard-000003.jsonl").write_text(
        json.dumps(asr_line("x", "dropped:language", [], language="de")) + "\n")
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="none")
    rec = Engine(s, PIPELINE, EnhanceStage(s)).run(3).record
    assert rec.counts["segments"] == 0 and rec.counts["members_decoded"] == 0
    assert rec.stat("padded_fraction") == 0.0 and rec.audio_seconds_out == 0.0
    assert read_tar(out / "enhanced/shard-000003.tar") == []
