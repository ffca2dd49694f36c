"""The attempt engine: every outcome is written, or said to be unwritten; never silently lost."""

from __future__ import annotations

from pathlib import Path

from common.errors import ModelUnavailable
from common.stages.engine import Engine
from fixtures.speechgen import make_shard
from services.stages import PIPELINE
from tests.dummy.stages import DummyAsr


def _shard(s, i: int = 0) -> None:
    make_shard(Path(s.input_url) / s.shard_name(i), {"a": {"wav": b"x"}})


def test_done_then_skipped(make_settings) -> None:
    s = make_settings()
    _shard(s)
    e = Engine(s, PIPELINE, DummyAsr)
    first = e.attempt(0)
    assert first.status == "done" and first.record.counts["files"] == 1
    assert e.attempt(0).status == "skipped"
    assert e.attempt(0, check_done=False).status == "done"  # forced: done again


def test_a_shard_id_with_no_file_name_still_leaves_a_record(make_settings) -> None:
    s = make_settings()
    e = Engine(s, PIPELINE, DummyAsr)
    a = e.attempt(10**400, last=True)  # its name is longer than any file name may be
    assert a.status == "dead"
    (rec,) = e.ledger.failures("asr")
    assert rec.dead_lettered and rec.shard_id == 10**400 and rec.reason
    assert e.ledger.failed_ids("asr", range(100)) == set()  # no shard of a range


def test_an_unwritable_ledger_is_reported_not_raised(make_settings) -> None:
    s = make_settings()
    _shard(s)
    Path(s.output_url).mkdir(parents=True)
    (Path(s.output_url) / "_ledger").write_text("in the way")  # nothing can go under it
    a = Engine(s, PIPELINE, DummyAsr).attempt(0, last=True)
    assert a.status == "unrecorded" and not a.ok
    assert a.error is not None and "Error" in a.reason


class _NoModel(DummyAsr):
    def load(self) -> None:
        raise ModelUnavailable("weights not found offline: set ONSEI_ASR_MODEL")


class _BadLoad(DummyAsr):
    def load(self) -> None:
        raise RuntimeError("CUDA error: no kernel image is available")


def test_model_unavailable_is_the_nodes_fault_not_the_shards(make_settings) -> None:
    """Every shard would fail the same way here: nothing is recorded against the shard (the
    Celery task hands it back and stops the worker: tests/reliability/test_sick_node.py)."""
    s = make_settings()
    _shard(s)
    for cls, words in ((_NoModel, "set ONSEI_ASR_MODEL"), (_BadLoad, "no kernel image")):
        e = Engine(s, PIPELINE, cls)
        a = e.attempt(0, attempt=1, last=True)
        assert a.status == "sick" and not a.ok and words in a.reason
        assert e.ledger.failures("asr") == [] and not e.ledger.is_done("asr", 0)


def test_one_scratch_dir_per_process_emptied_after_each_shard(make_settings) -> None:
    import gc

    s = make_settings()
    for i in range(3):
        _shard(s, i)
    e = Engine(s, PIPELINE, DummyAsr)
    for i in range(3):
        assert e.attempt(i).status == "done"
    scratch = Path(s.scratch_dir)
    (work,) = [p for p in scratch.iterdir() if p.name.startswith("onsei-work-asr-")
               and p.is_dir()]
    assert list(work.iterdir()) == []  # what the shards left is gone, the dir is reused
    work.rmdir()  # the scratch was cleaned under a running worker: a new one is made
    assert e.attempt(0, check_done=False).status == "done"
    (again,) = [p for p in scratch.iterdir() if p.name.startswith("onsei-work-asr-")
                and p.is_dir()]
    del e
    gc.collect()
    assert not again.exists()  # removed with the engine


class _TimedModel(DummyAsr):
    """Two "model calls" of 0.05 s each inside ``process``, plus 0.2 s outside any model call."""

    def process(self, shard_id, inputs, workdir):
        import time

        time.sleep(0.2)  # reading, writing: not the model's time
        for _ in range(2):
            with self.clock.model():
                time.sleep(0.05)
        return super().process(shard_id, inputs, workdir)


def test_model_calls_timed_by_the_stage_clock_land_in_the_done_record(make_settings) -> None:
    s = make_settings()
    for i in range(2):
        _shard(s, i)
    e = Engine(s, PIPELINE, _TimedModel)
    for i in range(2):  # the clock is reset per shard: the second record is not cumulative
        rec = e.attempt(i).record
        assert 0.1 <= rec.model_seconds < 0.2, rec
        assert rec.process_seconds >= rec.model_seconds + 0.2


def test_the_stage_is_handed_each_inputs_key(make_settings) -> None:
    """Where an input lives in its store comes from the engine (the pipeline resolved another
    stage's output), so a stage never looks the pipeline up itself."""
    from tests.dummy.stages import DummyEnhance

    seen: list[dict[str, str]] = []

    class _Keys(DummyEnhance):
        def process(self, shard_id, inputs, workdir):
            seen.append(dict(self.input_keys))
            return super().process(shard_id, inputs, workdir)

    s = make_settings()
    _shard(s, 3)
    assert Engine(s, PIPELINE, DummyAsr).attempt(3).status == "done"
    assert Engine(s, PIPELINE, _Keys).attempt(3).status == "done"
    assert seen == [{"shard": s.shard_name(3), "asr": "asr/shard-000003.jsonl"}]
