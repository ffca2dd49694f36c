"""A sick node must not drain the queue into dead letters (issue 25 item 8), and a dead letter
shows as FAILURE in the task events, with its reason (what Flower shows).

Before the fix a worker whose scratch disk was full dead-lettered every shard it took (3 in
~90 s), and a tokenize worker whose model could not load stayed up and dead-lettered every
shard in ~5 ms. Now the shard goes back to the queue uncounted, the worker says why in one line
and exits with status 75 (EX_TEMPFAIL: the restart policy starts it again after its back-off),
and a healthy worker does the shards.
"""

from __future__ import annotations

import pytest

from common.queue.publish import publish_shards
from common.queue.sick import EXIT_SICK
from services.ops.status.command import collect
from services.stages import make_app, output_key
from tests.harness import settings_from, start_worker, wait_until
from tests.reliability.events import TaskEvents
from tests.reliability.records import failure_docs
from tests.reliability.rig import Rig
from tests.reliability.tmpfs import tmpfs


def _blamed(led, stage: str):
    """An ``abort`` check: a shard was blamed (a failure record) for the node's fault."""
    return lambda: "; ".join(f"{stage} {r['shard_id']}: {r['reason']}"
                             for r in failure_docs(led, stage)) or None


@pytest.fixture
def rigs():
    made: list[Rig] = []
    yield made
    for r in made:
        r.close()


@pytest.fixture
def full_tmpfs(tmp_path):
    """A 2 MiB tmpfs filled to leave 128 KiB."""
    with tmpfs(tmp_path / "full-tmpfs", 2, leave_kib=128) as mnt:
        yield mnt


def test_full_scratch_disk_stops_the_worker_not_the_shards(rigs, tmp_path, s3_endpoint,
                                                          full_tmpfs):
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=3,
                     member_bytes=400_000, ONSEI_MAX_TASK_FAILURES="2",
                     ONSEI_PREFETCH_SHARDS="0")
    rigs.append(rig)
    (sick,) = rig.start_workers(1, queues="asr", ONSEI_SCRATCH_DIR=str(full_tmpfs / "work"))
    rig.enqueue()
    led = rig._ledger()
    assert wait_until(lambda: not sick.alive, 90, abort=_blamed(led, "asr")), \
        sick.log_text()[-5000:]
    assert sick.proc.returncode == EXIT_SICK, sick.log_text()[-5000:]
    log = sick.log_text()
    assert "this node cannot work (disk full" in log, log[-5000:]
    assert failure_docs(led, "asr") == [] and not led.done_ids("asr", rig.ids)  # nothing counted
    r = rig.redis.client()
    assert wait_until(lambda: r.llen("asr") == 3 and r.hlen("unacked") == 0, 30), \
        rig.broker_state()  # every shard back in the queue, none held
    (shown,) = collect(settings_from(rig.direct_env))["stages"]["asr"]["sick"]  # onsei status
    assert shown["node"].startswith(sick.name) and "disk full" in shown["reason"], shown
    rig.workers.remove(sick)
    rig.retired.append(sick)
    rig.start_workers(1)  # a healthy node takes them (and the stages after)
    missing = rig.wait_all(90)
    assert not missing, rig.not_done(missing)
    rig.audit().assert_exactly_once()


def test_tokenize_worker_without_its_model_hands_back_and_exits(rigs, tmp_path, s3_endpoint):
    """The load fails at process start (logged) and again at the first shard: that shard goes
    back, uncounted, and the worker exits; the other two were never taken."""
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=3,
                     ONSEI_TOKENIZE_NEUCODEC_MODEL=str(tmp_path / "no-such-model"))
    rigs.append(rig)
    led = rig._ledger()
    for i in rig.ids:  # its inputs are there: only the model is missing
        led.store.write_bytes(output_key("enhance", led.settings, i), b"\0" * 1024)
    app = make_app("sick-test", settings_from(rig.direct_env))
    publish_shards(app, "tokenize", rig.ids, until="tokenize")
    w = start_worker("services.tokenize", "tokenize", rig.env, log_dir=rig.root / "logs")
    rig.retired.append(w)
    assert wait_until(lambda: not w.alive, 120, abort=_blamed(led, "tokenize")), \
        w.log_text()[-5000:]
    assert w.proc.returncode == EXIT_SICK, w.log_text()[-5000:]
    log = w.log_text()
    assert "this node cannot work (model load failed: ModelLoadError" in log, log[-5000:]
    assert failure_docs(led, "tokenize") == []  # no shard blamed
    r = rig.redis.client()
    assert wait_until(lambda: r.llen("tokenize") == 3 and r.hlen("unacked") == 0, 30), \
        rig.broker_state()  # all three still queued for a node that can do them


def test_dead_lettered_shard_is_a_failure_in_the_task_events(rigs, tmp_path, s3_endpoint):
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=1,
                     ONSEI_DUMMY_FAIL="0", ONSEI_MAX_TASK_FAILURES="1")
    rigs.append(rig)
    with TaskEvents(rig.redis.url) as events:
        (w,) = rig.start_workers(1, queues="asr")
        rig.enqueue()
        failed = lambda: events.of_type("task-failed")
        assert events.wait(lambda: bool(failed()), 60), (events.events[-10:], w.log_text())
    (ev,) = failed()
    assert "DeadLettered" in ev["exception"] and "dummy failure for shard 0" in ev["exception"]
    assert not events.of_type("task-succeeded")
    (rec,) = failure_docs(rig._ledger(), "asr")
    assert rec["dead_lettered"] and rec["shard_id"] == 0
    assert "Traceback" not in w.log_text()  # an expected outcome: one line, not a traceback
