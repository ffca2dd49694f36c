"""The bad-input catalogue, driven through the shard reader + audio decoder, and through the ASR
stage (``bundled:whisper-base``): every member ends with its recorded reason, the rest of the
shard is done, nothing is written to disk by member name, nothing is lost.

The full catalogue through the ASR model is ``-m slow`` (a dozen transcriptions); the default run
sends every error case plus a few odd formats through it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from common.display import visible
from common.settings import Settings
from common.shards.tar import MemberError, Sample, ShardError, iter_shard
from services.stages import PIPELINE
from tests.reliability.catalogue import (
    GOOD_KEYS,
    Case,
    _enc,
    build_members,
    speech,
    tar_header,
    write_catalogue_shard,
    write_sparse_huge_member_shard,
)
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)
LIMITS = {"max_member_seconds": 3600.0}  # the 3 h file must hit the limit (default is 4 h)
ODD_AUDIO = {"rate8k", "ch6", "rate96k", "bits8", "trunc", "badjson", "hugejson"}
NON_SPEECH = {"silence", "noise", "music"}
DEFAULT_ASR = {"ch6", "bits8", "silence", "trunc"}  # odd formats the default run transcribes


@pytest.fixture(scope="module")
def sp16() -> np.ndarray:
    return speech(16000)


@pytest.fixture(scope="module")
def cases(sp16) -> list[Case]:
    return build_members(sp16)


def _line_key(c: Case) -> str:
    """The key a member's line carries: its WebDataset key, or its raw name when unsafe."""
    if c.reason.startswith("unsafe_member"):
        return visible(c.member.encode("utf-8", "surrogateescape").decode("utf-8",
                                                                            "backslashreplace"))
    return c.member.rsplit("/", 1)[-1].split(".", 1)[0] if "/" not in c.member else c.member


def test_reader_and_decoder_catalogue(cases, sp16, tmp_path, monkeypatch):
    from services.asr.decode_ahead import decoded_members

    monkeypatch.chdir(tmp_path)
    shard = write_catalogue_shard(tmp_path / "shard.tar", cases, _enc(sp16, 16000))
    s = Settings(**LIMITS)
    got: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    for d in decoded_members(shard, s):
        got.setdefault(d.key, []).append(d.error or "audio")
        if d.audio is not None:
            seconds[d.key] = d.audio.size / 16000
    for c in cases:
        if c.member.endswith(".json"):
            continue  # a sidecar: its key's audio is what gets a line
        reasons = got.get(_line_key(c), [])
        assert any(r.startswith(c.reason) for r in reasons), (c.name, reasons)
    for k in GOOD_KEYS:
        assert "audio" in got[k] and seconds[k] == pytest.approx(sp16.size / 16000, abs=0.05)
    assert got["good0"] == ["audio", "duplicate_key"]  # the first copy wins, the second recorded
    assert got["hugejson"] == ["member_too_large:2097163>1048576", "audio"] or \
        got["hugejson"][-1] == "audio"
    assert 0.5 < seconds["trunc"] < sp16.size / 16000 - 0.5  # cut short: keeps what decoded
    for k in ("rate8k", "ch6", "rate96k", "bits8"):
        assert seconds[k] == pytest.approx(sp16.size / 16000, abs=0.05), k
    assert os.listdir(tmp_path) == ["shard.tar"]  # nothing extracted to disk
    assert not Path("/tmp/onsei-abs.wav").exists()


def _shard_error(path: Path) -> str:
    with pytest.raises(ShardError) as ei:
        list(iter_shard(path, 1024**3))
    return str(ei.value)


def test_shard_level_damage(tmp_path, sp16):
    good = _enc(sp16[:16000], 16000)
    ok = write_catalogue_shard(tmp_path / "ok.tar", [], good)
    raw = ok.read_bytes()
    (tmp_path / "zero.tar").write_bytes(b"")
    (tmp_path / "garbage.tar").write_bytes(np.random.default_rng(1).bytes(20_000))
    (tmp_path / "trunc.tar").write_bytes(raw[: len(raw) // 2])
    with __import__("tarfile").open(ok) as tf:
        last = tf.getmembers()[-1]
    end = last.offset_data + -(-last.size // 512) * 512
    (tmp_path / "nofooter.tar").write_bytes(raw[:end])  # whole members, no end-of-archive
    corrupt = bytearray(raw)
    corrupt[512 + len(good) + 700: 512 + len(good) + 900] = b"\x07" * 200  # into a header
    (tmp_path / "corrupt.tar").write_bytes(bytes(corrupt))
    (tmp_path / "gzjunk.tar").write_bytes(b"\x1f\x8b\x08\x00" + b"junk" * 100)
    lie = tar_header("liar.wav", 10 * 1024**3) + good  # header claims 10 GiB, data is short
    (tmp_path / "liar.tar").write_bytes(lie + b"\0" * 1024)
    for name in ("zero", "garbage", "trunc", "nofooter", "corrupt", "gzjunk", "liar"):
        msg = _shard_error(tmp_path / f"{name}.tar")
        assert str(tmp_path / f"{name}.tar") in msg and len(msg) < 600, (name, msg)


def test_member_with_huge_size_is_skipped_unread(tmp_path, sp16):
    """A real 3 GiB member (sparse on disk) over the 2 GiB default: an error, then the next
    member is read; the reader seeks past it instead of reading 3 GiB."""
    good = _enc(sp16[:16000], 16000)
    path = write_sparse_huge_member_shard(tmp_path / "sparse.tar", 3 * 1024**3, good)
    if path.stat().st_blocks * 512 > 64 * 1024**2:
        pytest.skip("filesystem without sparse files")
    out = list(iter_shard(path, Settings().max_member_bytes))
    assert [o.key for o in out if isinstance(o, Sample)] == ["a", "b"]
    errs = [o for o in out if isinstance(o, MemberError)]
    assert len(errs) == 1 and errs[0].reason.startswith("member_too_large:3221225472")


# --- through the ASR stage -----------------------------------------------------------------------

def _run_asr(make_settings, shard_cases: list[Case], good: bytes, tmp_path: Path):
    from common.stages.engine import Engine
    from services.asr.stage import AsrStage

    s = make_settings(asr_model="bundled:whisper-base", asr_device="cpu", **LIMITS)
    write_catalogue_shard(Path(s.input_url) / s.shard_name(0), shard_cases, good)
    outcome = Engine(s, PIPELINE, AsrStage(s)).run(0)
    lines = [json.loads(x) for x in
             (Path(s.output_url) / "asr" / f"{s.shard_stem(0)}.jsonl").read_text().splitlines()]
    return s, outcome, lines


def _check_asr(cases: list[Case], outcome, lines: list[dict]) -> None:
    by_key: dict[str, list[dict]] = {}
    for line in lines:
        by_key.setdefault(line["key"], []).append(line)
    members = 3 + sum(1 for c in cases if not c.member.endswith(".json"))
    # An oversize sidecar may get its own error line beside its audio's line (when the stage
    # reads with max_sidecar_bytes); nothing else may add or lose a line.
    sidecar_lines = sum(1 for x in lines if x["status"].startswith("error:member_too_large")
                        and any(y["status"] == "ok" for y in by_key[x["key"]]))
    assert outcome.record.counts["files"] == len(lines)
    assert len(lines) - sidecar_lines == members  # one line per source member: none lost/doubled
    for k in GOOD_KEYS:
        ok = [x for x in by_key[k] if x["status"] == "ok"]
        assert len(ok) == 1 and ok[0]["language"] == "en", by_key[k]
        assert any(seg["kept"] for seg in ok[0]["segments"]), ok[0]
    for c in cases:
        if c.member.endswith(".json"):
            continue
        got = by_key.get(_line_key(c), [])
        statuses = [x["status"] for x in got]
        if c.reason == "audio" and c.name.split()[0] in NON_SPEECH:
            assert all(not seg["kept"] for x in got for seg in x["segments"]), (c.name, got)
            assert statuses[0] == "ok" or statuses[0].startswith("dropped:"), (c.name, statuses)
        elif c.reason == "audio":
            assert statuses and statuses[0] == "ok", (c.name, statuses)
            if c.name.startswith("truncated"):  # cut mid-speech: the segment at the cut is flagged
                assert "truncated" in (got[0]["segments"][-1]["reason"] or ""), (c.name, got)
            else:
                assert any(seg["kept"] for seg in got[0]["segments"]), (c.name, got)
        else:
            assert any(st.startswith(f"error:{c.reason}") for st in statuses), (c.name, statuses)
    if "trunc" in by_key:  # kept as far as it decodes, and the line says it was cut short
        notes = by_key["trunc"][0].get("notes") or []
        assert any(n.startswith("truncated:") for n in notes), by_key["trunc"][0]


@pytest.mark.parametrize("full", [pytest.param(False, id="reduced"),
                                  pytest.param(True, id="full", marks=pytest.mark.slow)])
def test_catalogue_through_asr_stage(full, cases, sp16, make_settings, tmp_path):
    keys = {_line_key(c) for c in cases if c.reason != "audio" and not c.member.endswith(".json")}
    chosen = [c for c in cases if full or _line_key(c) in keys | DEFAULT_ASR]
    _s, outcome, lines = _run_asr(make_settings, chosen, _enc(sp16, 16000), tmp_path)
    _check_asr(chosen, outcome, lines)
    assert outcome.record.counts["errors"] == sum(1 for c in chosen if c.reason != "audio"
                                                     and not c.member.endswith(".json"))


def test_damaged_shard_through_asr_stage_publishes_nothing(make_settings, sp16):
    """A truncated tar fails as a whole (ShardError: the worker records it and dead-letters it
    after its retries); no half output and no done record are ever published."""
    from common.ledger.store import Ledger
    from common.stages.engine import Engine
    from common.storage import open_store
    from services.asr.stage import AsrStage
    from services.stages import PIPELINE

    s = make_settings(asr_model="bundled:whisper-base", asr_device="cpu")
    path = write_catalogue_shard(Path(s.input_url) / s.shard_name(0), [], _enc(sp16, 16000))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ShardError, match="truncated"):
        Engine(s, PIPELINE, AsrStage(s)).run(0)
    out = open_store(s.output_url)
    assert list(out.list("asr/")) == []
    assert not Ledger(out, s, PIPELINE).is_done("asr", 0)
