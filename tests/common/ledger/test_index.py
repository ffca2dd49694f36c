"""Done records read once per machine (common/ledger/index.py): only new or rewritten
records are read again, a rewritten one is never served stale, deleting the cache costs a full read.
On the local store and on the S3 server (ETags)."""

from __future__ import annotations

from typing import Any

import pytest

from common.ledger.index import cache_path, done_records
from services.stages import open_ledger


def _ledger(s) -> tuple[Any, list[int]]:
    led = open_ledger(s)
    reads: list[int] = []
    real = led.read_done

    def counting(stage: str, i: int):
        reads.append(i)
        return real(stage, i)

    led.read_done = counting  # type: ignore[method-assign]  # counts the reads
    return led, reads


@pytest.mark.parametrize("where", ["local", "s3"])
def test_reads_only_what_changed(where, make_settings, request) -> None:
    if where == "s3":
        bucket = request.getfixturevalue("s3_bucket")
        s = make_settings(output_url=f"s3://{bucket}/out")
    else:
        s = make_settings()
    led, reads = _ledger(s)
    for i in range(5):
        led.mark_done("asr", i, {"wall_seconds": 1.0 + i, "audio_seconds_out": 10.0,
                                 "counts": {"big": 1}})
    recs = done_records(led, "asr")
    assert [r.shard_id for r in recs] == [0, 1, 2, 3, 4] and len(reads) == 5
    assert not hasattr(recs[0], "counts") and recs[4].wall_seconds == 5.0  # trimmed
    reads.clear()
    assert [r.wall_seconds for r in done_records(led, "asr")] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert reads == []  # nothing changed: nothing read
    led.mark_done("asr", 2, {"wall_seconds": 99.0})  # redone (--force): a new tag
    led.mark_done("asr", 7, {"wall_seconds": 7.0})
    recs = done_records(led, "asr", range(10))
    assert sorted(reads) == [2, 7] and recs[2].wall_seconds == 99.0
    assert [r.shard_id for r in done_records(led, "asr", range(3, 8))] == [3, 4, 7]
    led.store.delete(led.done_key("asr", 0))
    assert [r.shard_id for r in done_records(led, "asr")] == [1, 2, 3, 4, 7]
    cache_path(led, "asr").unlink()
    reads.clear()
    assert len(done_records(led, "asr")) == 5 and len(reads) == 5  # 1, 2, 3, 4, 7


def test_a_broken_cache_file_is_a_full_read(make_settings) -> None:
    s = make_settings()
    led, reads = _ledger(s)
    led.mark_done("enhance", 1, {"wall_seconds": 1.0})
    done_records(led, "enhance")
    cache_path(led, "enhance").write_text("{not json")
    reads.clear()
    assert done_records(led, "enhance")[0].shard_id == 1 and reads == [1]


def test_node_blocks_survive_the_cache(make_settings) -> None:
    s = make_settings()
    led, reads = _ledger(s)
    a = {"type": "L4", "price_per_hour": 0.3}
    b = {"type": "H100", "price_per_hour": 2.0}
    for i, node in enumerate([a, b, a, None]):
        led.mark_done("tokenize", i, {"wall_seconds": 1.0, **({"node": node} if node else {})})
    first = done_records(led, "tokenize")
    reads.clear()
    again = done_records(led, "tokenize")
    assert reads == [] and again == first
    assert [r.node for r in again] == [a, b, a, None]
    assert again[0].node is again[2].node  # one shared block per distinct node


def test_many_local_records_read_by_forked_processes(make_settings,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """From PROCESS_MIN records on a local disk they are read by worker processes: the same
    records, node blocks shared, a non-JSON record corrupt (not done) in both."""
    import common.ledger.index as rc

    s = make_settings()
    led = open_ledger(s)
    node = {"type": "L4", "price_per_hour": 0.3, "nested": {"spot": True}}
    for i in range(40):
        led.mark_done("asr", i, {"wall_seconds": float(i), "node": node})
    led.store.write_bytes(led.done_key("asr", 40), b"{not json")
    serial = rc.load_done(led, "asr")
    cache_path(led, "asr").unlink()  # and the rollup it wrote: every record is read again
    led.store.delete(rc.rollup.rollup_key(led, "asr", 0))
    monkeypatch.setattr(rc, "PROCESS_MIN", 10)
    used: list[int] = []
    real = rc.ProcessPoolExecutor

    def pool(n: int, **kw: Any) -> Any:
        used.append(n)
        return real(n, **kw)

    monkeypatch.setattr(rc, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(rc.os, "cpu_count", lambda: 2)
    forked = rc.load_done(led, "asr")
    assert used == [2]
    assert forked.done == serial.done == set(range(40)) and forked.record_reads == 41
    assert set(forked.corrupt) == set(serial.corrupt) == {40}
    assert forked.records == serial.records and len(forked.records) == 40
    assert forked.records[0].node is forked.records[39].node == node


@pytest.mark.parametrize("body", [b"", b"null", b"[1,2]", b'{"stage": "asr", "shard_id": 3}x',
                                  b'{"stage": "asr", "shard_id": 3, "audio_seconds_in": "lots"}',
                                  b'{"stage": "asr", "shard_id": 3, "wall_seconds": -4}',
                                  b'{"stage": "asr", "shard_id": 3, "audio_seconds_in": 1e308}',
                                  b'{"stage": "asr", "shard_id": 4}'])
def test_a_corrupt_done_record_is_not_done(make_settings, body: bytes) -> None:
    """Empty, not an object, wrong types, out of bounds, or naming another shard: reported as
    corrupt and not done, so enqueue-shards and `onsei run` redo the shard; the engine's own
    done check agrees."""
    from common.ledger.index import load_done, valid_done

    led = open_ledger(make_settings())
    for i in (1, 2):
        led.mark_done("asr", i, {"wall_seconds": 1.0})
    led.store.write_bytes(led.done_key("asr", 3), body)
    got = load_done(led, "asr")
    assert got.done == {1, 2} and set(got.corrupt) == {3}
    assert valid_done(led, "asr", range(5)) == {1, 2}
    assert not led.is_done("asr", 3) and led.is_done("asr", 2)
