"""Ledger (docs/architecture.md) over a local store and over S3 (moto's server over HTTP)."""

from __future__ import annotations

import os

import pytest

from common.ledger.store import Ledger
from common.storage import StorageError, open_store
from services.stages import PIPELINE
from tests.faultproxy import FaultProxy


@pytest.fixture(params=["local", "s3"])
def env(request, make_settings, tmp_path):
    """(ledger, proxy or None, make_ledger(**settings overrides)) for each backend."""
    if request.param == "local":
        def make(**kw):
            s = make_settings(**kw)
            return Ledger(open_store(str(tmp_path / "out"), s), s, PIPELINE)
        return make(), None, make
    bucket = request.getfixturevalue("s3_bucket")
    proxy = request.getfixturevalue("s3_proxy")

    def make(**kw):
        s = make_settings(s3_endpoint_url=proxy.url, **kw)
        return Ledger(open_store(f"s3://{bucket}/out", s), s, PIPELINE)

    return make(), proxy, make


def test_done_record_fields_and_failure_superseded(env) -> None:
    ledger, _, _ = env
    ledger.mark_failed("asr", 7, "boom password=hunter2", attempts=2)
    assert ledger.failed_ids("asr") == {7}
    assert "hunter2" not in str(ledger.failures("asr"))
    rec = ledger.mark_done("asr", 7, {"counts": {"files": 3}, "shard_id": 999, "stage": "x"})
    assert ledger.is_done("asr", 7) and not ledger.is_done("asr", 8)
    got = ledger.read_done("asr", 7)
    assert got == rec
    assert (got.stage, got.shard_id, got.shard) == ("asr", 7, "shard-000007.tar")
    assert got.counts == {"files": 3} and got.host and got.finished_at > 0
    assert ledger.failed_ids("asr") == set()  # the success removed the failure record
    assert ledger.read_done("asr", 8) is None
    assert [r.shard_id for r in ledger.done_records("asr")] == [7]
    assert list(ledger.store.list("_ledger/asr/")) == ["_ledger/asr/shard-000007.json"]


def test_done_record_is_atomic(env, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, proxy, make = env
    ledger.mark_failed("asr", 3, "earlier failure")
    if proxy is None:
        def broken_fsync(fd: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fsync", broken_fsync)
        with pytest.raises(OSError):
            ledger.mark_done("asr", 3, {"counts": {}})
        monkeypatch.undo()
    else:
        ledger = make(s3_max_attempts=1)
        proxy.set_fault("reset", methods={"PUT"})  # the connection dies during the PUT
        with pytest.raises(StorageError):
            ledger.mark_done("asr", 3, {"counts": {}})
        proxy.clear()
    assert not ledger.is_done("asr", 3)
    assert list(ledger.store.list("_ledger/asr/")) == []  # no partial or temp file visible
    assert ledger.failed_ids("asr") == {3}  # the failure record stays until a success


def test_tokenizer_has_its_own_ledger(env) -> None:
    _, _, make = env
    neu, distill = make(tokenize_codec="neucodec"), make(tokenize_codec="distill-neucodec")
    neu.mark_done("tokenize", 1, {})
    neu.mark_failed("tokenize", 2, "oom")
    assert neu.done_ids("tokenize") == {1} and distill.done_ids("tokenize") == set()
    assert distill.failed_ids("tokenize") == set()
    distill.mark_done("tokenize", 2, {})  # must not erase neucodec's failure record
    assert neu.failed_ids("tokenize") == {2}
    assert neu.done_key("tokenize", 1) == "_ledger/tokenize/neucodec/shard-000001.json"


def test_done_ids_with_custom_pattern_and_stray_keys(env) -> None:
    _, _, make = env
    ledger = make(shard_pattern="v2-part{id}.tar")
    for sid in (5, 12, 50, 120):
        ledger.mark_done("enhance", sid, {})
    ledger.store.write_bytes("_ledger/enhance/notes.json", b"{}")
    ledger.store.write_bytes("_ledger/enhance/sub/v2-part7.json", b"{}")
    ledger.store.write_bytes("_ledger/enhance/v2-part07.json", b"{}")  # not a name we write
    assert ledger.done_ids("enhance") == {5, 12, 50, 120}
    assert ledger.done_ids("enhance", range(100)) == {5, 12, 50}
    assert ledger.done_ids("enhance", range(10, 20)) == {12}
    assert ledger.done_ids("enhance", {120, 5, 6}) == {5, 120}
    assert ledger.done_ids("asr", range(100)) == set()


# --- listing cost: a 50,000-shard range is a handful of LIST pages, never a request per shard ---
@pytest.mark.parametrize("n_records", [
    5_000,
    pytest.param(50_000, marks=pytest.mark.slow),  # moto lists 50k keys in ~100 s
])
def test_done_ids_over_50000_range_costs_list_pages_only(inproc_s3, make_settings,
                                                         n_records: int) -> None:
    bucket = inproc_s3.create_bucket(f"ledger-{n_records}")
    step = 50_000 // n_records
    done = set(range(0, 50_000, step))
    with FaultProxy(inproc_s3.url) as proxy:
        s = make_settings(s3_endpoint_url=proxy.url)
        ledger = Ledger(open_store(f"s3://{bucket}/out", s), s, PIPELINE)
        inproc_s3.put_keys(bucket, (f"out/{ledger.done_key('asr', i)}" for i in done))
        inproc_s3.put_keys(bucket, (f"out/{ledger.done_key('asr', i)}"
                                    for i in range(120_000, 120_100)))  # outside the range
        got = ledger.done_ids("asr", range(50_000))
        assert got == done
        lists = proxy.requests("GET", "list-type=2")
        assert lists == -(-n_records // 1000)  # one LIST per 1000-key page
        assert sum(proxy.counts.values()) == lists + 1  # no HEAD/GET per shard (1: the probe)
        proxy.reset_counts()
        assert ledger.done_ids("asr", range(120_000, 120_050)) == set(range(120_000, 120_050))
        assert sum(proxy.counts.values()) == 1  # narrowed to the range's name prefix


def test_done_ids_local_range(make_settings, tmp_path) -> None:
    s = make_settings()
    root = tmp_path / "out" / "_ledger" / "asr"
    root.mkdir(parents=True)
    for i in range(0, 50_000, 50):
        (root / f"{s.shard_stem(i)}.json").write_bytes(b"{}")
    ledger = Ledger(open_store(str(tmp_path / "out"), s), s, PIPELINE)
    assert ledger.done_ids("asr", range(50_000)) == set(range(0, 50_000, 50))
    assert ledger.done_ids("asr", range(100, 300)) == {100, 150, 200, 250}
