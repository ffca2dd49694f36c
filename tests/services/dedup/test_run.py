"""``onsei dedup`` end to end on a local output root: the matcher on real speech and its copies,
an incremental second run, resuming after a crash, bad signature files and an empty root."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from common.storage import open_store
from services.dedup.result import DUPLICATES_KEY, SUMMARY_KEY, DedupResult
from services.dedup.run import PARTS, Deduper, NothingToDedup
from services.dedup.signature import signature_key
from services.records import Mos, Quality
from services.tokenize.filter import FilterPolicy
from tests.services.dedup import helpers as h
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)


@pytest.fixture(scope="module")
def corpus() -> dict[int, list[h.Seg]]:
    return h.corpus()


def _root(tmp_path: Path, corpus, shards=(0, 1, 2), **over):
    s = h.settings(tmp_path / "out", tmp_path, **{"dedup_batch_shards": 1, **over})
    for i in shards:
        h.add_shard(s, i, corpus[i])
    return s


def _dedup(s, ids=None, workdir=None) -> tuple[Deduper, DedupResult]:
    store = open_store(s.output_url, s)
    d = Deduper(s, store, h.ledger(s), workdir)
    d.run(ids)
    res = DedupResult.load(store)
    assert res is not None
    return d, res


def _pairs(res: DedupResult) -> dict[str, str]:
    return {k: v.duplicate_of for k, v in res.duplicates.items()}


# by corpus id: <segment id>@<shard>
EXPECTED = {"a_0000@000000": "h_0000@000002", "d_0000@000001": "h_0000@000002",
            "e_0000@000001": "b_0000@000000"}


def test_copies_are_found_and_look_alikes_are_not(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus)
    _, res = _dedup(s)
    # the noisy copy in shard 2 has the best OVRL: kept; the telephone copy (a word less in its
    # text) joins its original; same words by espeak (f) and other words by the reader (g) not
    assert _pairs(res) == EXPECTED
    assert all(d.kind == "same_recording" and 0.3 < d.score <= 1.0
               for d in res.duplicates.values())
    sm = res.summary
    assert sm.shards == [0, 1, 2] and sm.segments == 8 and sm.clusters == 2
    assert sm.duplicate_segments == 3 and sm.bad_signatures == {}
    assert sm.duplicate_seconds == pytest.approx(
        sum(d.seconds for d in res.duplicates.values()), abs=1e-3)
    assert sm.largest[0].keep == "h_0000@000002" and sm.largest[0].size == 3
    assert sm.largest[0].text == h.clips()[0].text
    assert res.covers(2) and not res.covers(3)


def test_ties_keep_the_earliest_shard(tmp_path, corpus) -> None:
    s = h.settings(tmp_path / "out", tmp_path)
    h.add_shard(s, 5, [h.copy(0, "mp3_64k", "z_0000", None)])
    h.add_shard(s, 3, [h.original(0, "y_0000", None)])
    _, res = _dedup(s)
    assert _pairs(res) == {"z_0000@000005": "y_0000@000003"}


def test_second_run_indexes_only_new_shards(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus, shards=(0, 1))
    d1, res1 = _dedup(s)
    assert d1.progress.indexed == 2 and res1.summary.shards == [0, 1]
    assert _pairs(res1) == {"d_0000@000001": "a_0000@000000", "e_0000@000001": "b_0000@000000"}
    h.add_shard(s, 2, corpus[2])
    d2, res2 = _dedup(s)
    assert d2.progress.indexed == 1 and d2.progress.segments == 1  # shard 2 only
    assert _pairs(res2) == EXPECTED and res2.summary.shards == [0, 1, 2]
    d3, res3 = _dedup(s)  # nothing new: the same result
    assert d3.progress.indexed == 0 and _pairs(res3) == EXPECTED


def test_range_limits_what_is_indexed_not_what_is_matched(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus)
    _, res = _dedup(s, ids=range(1))
    assert res.summary.shards == [0] and res.duplicates == {}
    _, res = _dedup(s, ids=range(2, 3))  # matched against shard 0 indexed before
    assert res.summary.shards == [0, 2] and _pairs(res) == {"a_0000@000000": "h_0000@000002"}


def test_the_index_is_rebuilt_on_another_machine(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus, shards=(0, 1))
    d, _ = _dedup(s)
    shutil.rmtree(d.workdir)  # a fresh machine: only the store is left
    h.add_shard(s, 2, corpus[2])
    d2, res = _dedup(s)
    assert d2.progress.indexed == 1 and _pairs(res) == EXPECTED


class Crash(Exception):
    pass


@pytest.mark.parametrize("records_before_crash", [0, 1])
def test_resumes_after_a_crash(tmp_path, corpus, monkeypatch, records_before_crash) -> None:
    s = _root(tmp_path, corpus, dedup_batch_shards=3)
    store = open_store(s.output_url, s)
    real = Deduper._record
    written: list[int] = []

    def crashing(self, shard, part, segments):
        if len(written) == records_before_crash:
            raise Crash("killed")
        written.append(shard)
        real(self, shard, part, segments)

    monkeypatch.setattr(Deduper, "_record", crashing)
    with pytest.raises(Crash):
        Deduper(s, store, h.ledger(s)).run()
    assert len(list(store.list(PARTS))) == 1  # published before any record
    assert DedupResult.load(store) is None
    monkeypatch.setattr(Deduper, "_record", real)
    d, res = _dedup(s)
    assert _pairs(res) == EXPECTED and res.summary.shards == [0, 1, 2]
    # one batch's pairs, once: a part without records is dropped, one with some is finished
    assert len(list(store.list(PARTS))) == 1
    assert d.progress.indexed == (3 if records_before_crash == 0 else 0)
    assert len(h.ledger(s).done_ids("dedup")) == 3


def test_bad_signature_files_are_named_and_left_out(tmp_path, corpus) -> None:
    s = _root(tmp_path, corpus)
    root = Path(s.output_url)
    h.add_shard(s, 7, [h.copy(1, "mp3_64k", "x_0000")])
    (root / signature_key(s, 7)).write_bytes(b"PAR1 truncated")
    h.add_shard(s, 8, [h.copy(1, "opus_24k", "w_0000")])
    (root / signature_key(s, 8)).unlink()
    h.add_shard(s, 9, [h.copy(1, "pad_0.5s", "v_0000")])
    path = root / signature_key(s, 9)
    data = bytearray(path.read_bytes())  # pages damaged, the footer intact
    data[200:1200] = bytes(1000)
    path.write_bytes(bytes(data))
    _, res = _dedup(s)
    bad = res.summary.bad_signatures
    assert set(bad) == {signature_key(s, i) for i in (7, 8, 9)}
    assert bad[signature_key(s, 9)].startswith("corrupt")
    assert bad[signature_key(s, 8)] == "missing"
    assert bad[signature_key(s, 7)].startswith("corrupt")
    assert res.summary.shards == [0, 1, 2] and _pairs(res) == EXPECTED
    assert not res.covers(7)
    h.add_shard(s, 7, [h.copy(1, "mp3_64k", "x_0000")])  # fixed: indexed by the next run
    _, res = _dedup(s)
    assert res.covers(7) and _pairs(res)["x_0000@000007"] == "b_0000@000000"


def test_an_empty_root_says_so(tmp_path) -> None:
    s = h.settings(tmp_path / "out", tmp_path)
    with pytest.raises(NothingToDedup, match="no enhanced shards"):
        Deduper(s, open_store(s.output_url, s), h.ledger(s)).run()
    assert not (tmp_path / "out" / SUMMARY_KEY).exists()
    assert not (tmp_path / "out" / DUPLICATES_KEY).exists()


@pytest.mark.parametrize("acoustic", [True, False])
def test_a_copy_transcribed_differently_is_found_by_its_audio(tmp_path, acoustic: bool) -> None:
    # the noisy copy's transcript shares no word pair with the original's: only the audio keys
    # can propose the pair, and the fingerprint confirms it
    s = h.settings(tmp_path / "out", tmp_path, dedup_acoustic_keys=acoustic)
    h.add_shard(s, 0, [h.original(0, "a_0000", 3.0), h.other_speaker(0, "b_0000")])
    h.add_shard(s, 1, [h.copy(0, "noise_20dB", "c_0000", 2.0, text="end mister on dash would")])
    _, res = _dedup(s)
    assert _pairs(res) == ({"c_0000@000001": "a_0000@000000"} if acoustic else {})


def test_a_key_two_shards_share_is_two_segments_and_the_copy_kept_passes(tmp_path) -> None:
    """Two pack-audio runs name a clip alike: two segments, never one listed as a copy of
    itself. The copy with the better OVRL is flagged multi_speaker: with the filter policy
    the other is kept (without it, OVRL alone decides)."""
    s = h.settings(tmp_path / "out", tmp_path)
    flagged = Quality(multi_speaker=True, dnsmos_after=Mos(ovrl=4.0))
    clean = Quality(multi_speaker=False, dnsmos_after=Mos(ovrl=3.0))
    h.add_shard(s, 0, [h.original(0, "same_0000", 4.0, quality=flagged)])
    h.add_shard(s, 1, [h.copy(0, "mp3_64k", "same_0000", 3.0, quality=clean)])
    store = open_store(s.output_url, s)
    Deduper(s, store, h.ledger(s), policy=FilterPolicy(multi_speaker=True)).run()
    res = DedupResult.load(store)
    assert res is not None and _pairs(res) == {"same_0000@000000": "same_0000@000001"}
    line = res.duplicates["same_0000@000000"]
    assert line.rank == 1 and res.qualities(line.id) == (flagged, clean)
    assert res.summary.largest[0].keep == "same_0000@000001"
    _, res = _dedup(s)
    assert _pairs(res) == {"same_0000@000001": "same_0000@000000"}
