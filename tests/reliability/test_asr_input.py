"""Enhance does not trust its asr input (issue 25, item 6): a key ok on two lines, times out of
the file's bounds, numbers that are not finite, a negative idx, and audio samples that are not
finite each fail the shard with a reason naming the line, instead of a wrong output marked done
(a 3,001 s segment from a 3.7 s file, ``k_-001``, a lost segment) or a bare
``ValueError`` / ``OverflowError`` / ``AssertionError``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from common.stages.engine import Engine
from fixtures.speechgen import make_shard, wav_bytes
from services.enhance.segments import AsrInputError, read_plan
from services.enhance.stage import EnhanceStage
from services.enhance.verify import SegmentMismatch
from services.stages import PIPELINE, open_ledger
from tests.services.enhance.helpers import asr_line, speech
from tests.system_packages import ESPEAK, needs

SECONDS = 3.7


def _line(key: str = "k1", start: object = 0.5, end: object = 2.0, idx: object = 0,
          duration: object = SECONDS) -> str:
    """An ok asr line with one kept segment, the numbers written as given (``NaN`` too)."""
    line = asr_line(key, "ok", [(0.5, 2.0, True)])
    line["duration"] = "@D@"
    line["segments"][0].update(idx="@I@", start="@S@", end="@E@")
    text = json.dumps(line)
    for mark, value in (("@D@", duration), ("@I@", idx), ("@S@", start), ("@E@", end)):
        text = text.replace(f'"{mark}"', str(value))
    return text + "\n"


BAD = {  # case -> (the asr JSONL, what the reason must name)
    "key-twice": (_line("k1", 0.5, 1.5) + _line("k1", 2.0, 3.0), "key is ok on line 1 too"),
    "negative-start": (_line(start=-3000), "not 0 <= start (-3000.0)"),
    "end-after-duration": (_line(end=9.0), "end (9.0) <= duration (3.7)"),
    "nan-start": (_line(start="NaN"), "not finite"),
    "infinite-end": (_line(end="Infinity"), "not finite"),
    "huge-times": (_line(start=1e308, end=1e308, duration=1e308), "duration 1e+308 is over"),
    "nan-duration": (_line(duration="NaN"), "duration nan is not a positive finite"),
    "negative-idx": (_line(idx=-1), "idx is negative"),
    "idx-twice": (_line().replace('"reason": null}]',
                                  '"reason": null}, {"idx": 0, "start": 2.5, "end": 3.0, '
                                  '"text": "t", "kept": true}]'), "idx 0: idx repeats"),
}


def _write(out: Path, jsonl: str, shard: int = 0) -> Path:
    p = out / "asr" / f"shard-{shard:06d}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(jsonl)
    return p


@pytest.mark.parametrize("case", list(BAD))
def test_bad_asr_line_is_a_clear_reason(case, tmp_path):
    jsonl, why = BAD[case]
    with pytest.raises(AsrInputError) as ei:
        read_plan(_write(tmp_path, jsonl), max_seconds=4 * 3600.0)
    msg = str(ei.value)
    assert msg.startswith("shard-000000.jsonl line ") and "key 'k1'" in msg, msg
    assert why in msg, msg


def test_good_lines_and_error_lines_of_a_kept_key_still_read(tmp_path):
    """asr writes an error line beside the ok one for a key with a bad sidecar, and a second
    copy of a key as ``error:duplicate_key``: neither is a repeat."""
    err = json.dumps(asr_line("k1", "error:duplicate_key", [])) + "\n"
    plan = read_plan(_write(tmp_path, _line("k1") + err + _line("k2", 0.0, SECONDS)))
    assert sorted(plan.by_key) == ["k1", "k2"] and plan.segments == 2 and not plan.errors


@pytest.fixture
def raw_shard(tmp_path):
    """A real 3.7 s member ``k1`` in shard 0."""
    raw = tmp_path / "raw"
    make_shard(raw / "shard-000000.tar", {"k1": {"wav": wav_bytes(speech(SECONDS))}})
    return raw


@needs(ESPEAK)
@pytest.mark.parametrize("case", ["key-twice", "negative-start", "huge-times", "negative-idx"])
def test_the_shard_fails_with_the_reason_and_nothing_is_published(case, raw_shard, tmp_path,
                                                                  make_settings):
    from common.storage import open_store

    out = tmp_path / "out"
    _write(out, BAD[case][0])
    s = make_settings(input_url=str(raw_shard), output_url=str(out), enhance_backend="none")
    res = Engine(s, PIPELINE, EnhanceStage(s)).attempt(0)
    assert res.status == "failed" and isinstance(res.error, AsrInputError), res
    assert res.reason.startswith("AsrInputError: asr/shard-000000.jsonl line "), res.reason
    assert BAD[case][1] in res.reason, res.reason
    store = open_store(s.output_url)
    assert list(store.list("enhanced/")) == []
    assert not open_ledger(s).is_done("enhance", 0)
    failed = [json.loads(store.read_bytes(k)) for k in store.list("_ledger/_failed/enhance/")]
    assert len(failed) == 1 and BAD[case][1] in failed[0]["reason"], failed


def _float_wav(x: np.ndarray) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, x, 16000, format="WAV", subtype="FLOAT")
    return buf.getvalue()


@needs(ESPEAK)
@pytest.mark.parametrize("bad", [np.nan, np.inf], ids=["nan", "inf"])
def test_non_finite_samples_fail_the_shard_naming_the_member(bad, tmp_path, make_settings):
    """asr records such a member as ``error:non_finite_samples``; forced into enhance by an asr
    line claiming it, the shard fails naming it (it was a bare AssertionError)."""
    x = speech(SECONDS)
    x[8000:8100] = bad
    raw, out = tmp_path / "raw", tmp_path / "out"
    make_shard(raw / "shard-000000.tar", {"k1": {"wav": _float_wav(x)}})
    _write(out, _line("k1"))
    s = make_settings(input_url=str(raw), output_url=str(out), enhance_backend="none")
    with pytest.raises(SegmentMismatch) as ei:
        Engine(s, PIPELINE, EnhanceStage(s)).run(0)
    assert "k1_0000 (error:non_finite_samples)" in str(ei.value), str(ei.value)
