"""Shared rollups of done records (common/ledger/rollup.py via
common/ledger/index.py): a machine's first status reads the rollups instead of every
record; a stale entry is read again from its record, a corrupt rollup is ignored and rewritten, and
neither ever changes the done count."""

from __future__ import annotations

import json

import pytest

from common.ledger import rollup
from common.ledger.index import load_done
from services.stages import open_ledger

N = 25  # one block, more than ROLLUP_MIN records


def _machine(make_settings, tmp_path, name: str, **kw):
    """A ledger as seen from another machine: same output root, its own scratch dir."""
    return open_ledger(make_settings(scratch_dir=str(tmp_path / f"scratch-{name}"), **kw))


def _fill(led, n: int = N) -> None:
    for i in range(n):
        led.mark_done("asr", i, {"wall_seconds": 1.0 + i, "audio_seconds_in": 60.0,
                                 "node": {"type": "L4", "price_per_hour": 0.3}})


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_second_machine_reads_the_rollup_not_the_records(where, make_settings, tmp_path,
                                                           request) -> None:
    kw = {}
    if where == "s3":
        kw["output_url"] = f"s3://{request.getfixturevalue('s3_bucket')}/out"
    a = _machine(make_settings, tmp_path, "a", **kw)
    _fill(a)
    first = load_done(a, "asr")
    assert (first.record_reads, first.rollup_reads, first.rollups_written) == (N, 1, 1)
    assert a.store.exists(rollup.rollup_key(a, "asr", 0))

    b = _machine(make_settings, tmp_path, "b", **kw)
    got = load_done(b, "asr")
    assert (got.record_reads, got.rollup_reads, got.from_rollups) == (0, 1, N)
    assert got.records == first.records and got.done == set(range(N))
    again = load_done(b, "asr")  # its own cache now: no request but the listing
    assert (again.record_reads, again.rollup_reads) == (0, 0)

    a.mark_done("asr", 3, {"wall_seconds": 99.0})  # redone: the rollup entry is stale
    c = _machine(make_settings, tmp_path, "c", **kw)
    got = load_done(c, "asr")
    assert got.record_reads == 1 and got.from_rollups == N - 1
    assert got.records[3].wall_seconds == 99.0 and len(got.done) == N


def test_a_corrupt_rollup_is_read_around_and_rewritten(make_settings, tmp_path) -> None:
    a = _machine(make_settings, tmp_path, "a")
    _fill(a)
    truth = load_done(a, "asr").records
    key = rollup.rollup_key(a, "asr", 0)
    a.store.write_bytes(key, b'{"version": 1, "records": {tru')
    got = load_done(_machine(make_settings, tmp_path, "b"), "asr")
    assert got.records == truth and got.record_reads == N and got.rollups_written == 1
    assert json.loads(a.store.read_bytes(key))["block"] == 0  # whole again
    got = load_done(_machine(make_settings, tmp_path, "c"), "asr")
    assert got.records == truth and got.record_reads == 0


def test_stale_misplaced_or_missing_entries_never_count(make_settings, tmp_path) -> None:
    a = _machine(make_settings, tmp_path, "a")
    _fill(a)
    load_done(a, "asr")
    key = rollup.rollup_key(a, "asr", 0)
    data = json.loads(a.store.read_bytes(key))
    walls = data["columns"]["wall_seconds"]
    walls[6], data["tags"][6] = 1e6, "not-the-tag"  # a stale entry
    data["tags"][4] = ""  # a tagless one
    for sid in (777, 1001):  # no such record; an id of another block
        data["ids"].append(sid)
        data["tags"].append(data["tags"][7])
        data["node"].append(None)
        for col in data["columns"].values():
            col.append(None)
    _resign(data)  # planted by a writer of rollups, not an edit: the entries' tags decide
    a.store.write_bytes(key, json.dumps(data).encode())
    a.store.delete(a.done_key("asr", 9))  # the listing no longer has it; the rollup does

    got = load_done(_machine(make_settings, tmp_path, "b"), "asr")
    assert got.done == set(range(N)) - {9}
    by_id = {r.shard_id: r for r in got.records}
    assert sorted(by_id) == sorted(got.done)
    assert by_id[6].wall_seconds == 7.0 and by_id[4].wall_seconds == 5.0
    assert got.record_reads == 2  # 4 and 6 from their records; the rest from the rollup


@pytest.mark.parametrize("breakage", ["short column", "wrong type", "node slot", "not a dict"])
def test_a_malformed_rollup_is_ignored_whole(breakage, make_settings, tmp_path) -> None:
    a = _machine(make_settings, tmp_path, "a")
    _fill(a)
    truth = load_done(a, "asr").records
    key = rollup.rollup_key(a, "asr", 0)
    data = json.loads(a.store.read_bytes(key))
    if breakage == "short column":
        data["columns"]["audio_seconds_in"].pop()
    elif breakage == "wrong type":
        data["columns"]["wall_seconds"][3] = "1e6"
    elif breakage == "node slot":
        data["node"][2] = 9
    else:
        data = [data]
    a.store.write_bytes(key, json.dumps(data).encode())
    got = load_done(_machine(make_settings, tmp_path, "b"), "asr")
    assert got.records == truth and got.record_reads == N and got.rollups_written == 1


def test_a_range_keeps_the_rest_of_the_block(make_settings, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("common.ledger.index.ROLLUP_MIN", 3)
    a = _machine(make_settings, tmp_path, "a")
    _fill(a, 10)
    load_done(a, "asr", range(5))  # rollup holds 0..4
    load_done(_machine(make_settings, tmp_path, "b"), "asr", range(5, 10))  # 5..9 added
    got = load_done(_machine(make_settings, tmp_path, "c"), "asr")
    assert got.record_reads == 0 and got.from_rollups == 10


def test_a_read_only_store_still_answers(make_settings, tmp_path, monkeypatch) -> None:
    a = _machine(make_settings, tmp_path, "a")
    _fill(a)

    def refuse(key: str, data: bytes) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(a.store, "write_bytes", refuse)
    got = load_done(a, "asr")
    assert len(got.records) == N and got.rollups_written == 0


def _resign(data: dict) -> None:
    from common.ledger.pack import _digest

    data["sha256"] = _digest({k: data[k] for k in ("ids", "tags", "nodes", "node", "columns")})


def test_a_rollup_edited_in_place_is_not_trusted(make_settings, tmp_path) -> None:
    """Same size, same tags, one figure changed: the checksum fails, the records are read."""
    a = _machine(make_settings, tmp_path, "a")
    _fill(a)
    load_done(a, "asr")
    key = rollup.rollup_key(a, "asr", 0)
    body = a.store.read_bytes(key)
    data = json.loads(body)
    walls = data["columns"]["wall_seconds"]
    assert walls[3] == 4.0
    walls[3] = 9.0
    edited = json.dumps(data, separators=(",", ":")).encode()
    assert len(edited) == len(body)
    a.store.write_bytes(key, edited)
    got = load_done(_machine(make_settings, tmp_path, "b"), "asr")
    assert {r.shard_id: r.wall_seconds for r in got.records}[3] == 4.0
    assert got.from_rollups == 0 and got.record_reads == N
