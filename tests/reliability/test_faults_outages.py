"""Fault campaign, outages: the workers' scratch disk full, Redis stopped while a worker holds a
message. The same rig and audit as test_faults.py (tests/reliability/fault_runs.py).
"""

from __future__ import annotations

import os
import time

import pytest

from common.queue.sick import EXIT_SICK
from tests.harness import wait_until
from tests.reliability.fault_runs import DUMMY, REAL, finish, make_rig, timeouts
from tests.reliability.records import failure_docs
from tests.reliability.rig import REDELIVER_SECONDS
from tests.reliability.tmpfs import resize, tmpfs


# --- scratch disk full ----------------------------------------------------------------------------
@pytest.fixture
def small_tmpfs(tmp_path):
    """A 3 MiB tmpfs as the workers' scratch dir."""
    with tmpfs(tmp_path / "scratch-tmpfs", 3) as mnt:
        yield mnt


@pytest.mark.parametrize("pipeline", [DUMMY, REAL])
def test_scratch_disk_full(pipeline, rigs, tmp_path, s3_endpoint, small_tmpfs):
    filler = small_tmpfs / "filler"
    with open(filler, "wb") as f:  # leave ~256 KiB: every shard (~1.2 MB) fails mid-download
        f.write(b"\0" * (3 * 1024**2 - 256 * 1024))
    rig = make_rig(rigs, tmp_path, s3_endpoint, pipeline, shards=4, member_bytes=400_000,
                scratch=small_tmpfs / "work", ONSEI_MAX_TASK_FAILURES="1000",
                ONSEI_RETRY_BACKOFF_SECONDS="0.5", ONSEI_RETRY_BACKOFF_MAX_SECONDS="2")
    if pipeline == "real":  # real shards are small: fill up to what they cannot fit
        os.truncate(filler, 3 * 1024**2 - 64 * 1024)
    sick = rig.start_workers(2)
    rig.enqueue()
    led = rig._ledger()
    # A full disk is the node's fault (issue 25): each worker hands its shard back and exits
    # 75 instead of failing shards; nothing is recorded against them.
    assert wait_until(lambda: not any(w.alive for w in sick), 120), rig.logs()[-5000:]
    assert [w.proc.returncode for w in sick] == [EXIT_SICK] * 2, rig.logs()[-5000:]
    assert "this node cannot work (disk full" in rig.logs(tail=10**6)
    assert failure_docs(led, "asr") == []
    assert not led.done_ids("asr", rig.ids)  # nothing half-done was published
    assert list(led.store.list("asr/")) == []
    for w in sick:
        rig.workers.remove(w)
        rig.retired.append(w)
    # The operator frees space: enough for two workers' shards at once (a full disk again
    # would stop them again, rightly).
    filler.unlink()
    resize(small_tmpfs, 64)
    rig.start_workers(2)
    finish(rig, timeouts(pipeline))


# --- Redis down for a while ----------------------------------------------------------------------
# The slow campaign: in the default run, test_handon.py takes Redis down while the asr worker
# holds its unacked message (every worker must live on), and test_kombu_fix.py checks the
# channel close that used to kill it.
@pytest.mark.slow
@pytest.mark.parametrize("stage", ["asr", "enhance", "tokenize"])
def test_worker_survives_redis_down_while_a_message_is_reserved(stage, rigs, tmp_path,
                                                                s3_endpoint):
    """Redis stopped for 20 s while ``stage``'s worker holds a message (kombu can
    crash a worker restoring unacked messages: common/queue/kombu_fix.py): every worker lives on and
    the run ends."""
    rig = make_rig(rigs, tmp_path, s3_endpoint, "dummy", shards=2, persist_redis=True,
                ONSEI_DUMMY_SECONDS="3", ONSEI_VISIBILITY_TIMEOUT=REDELIVER_SECONDS["dummy"])
    workers = {s: rig.start_workers(1, queues=s)[0] for s in rig.chain}
    rig.enqueue()
    held = f"onsei.{stage}.process_shard"
    assert wait_until(lambda: f"{held}[" in workers[stage].log_text(), 60), rig.logs()[-4000:]
    rig.redis.stop(hard=True)
    time.sleep(20)
    rig.redis.start()
    finish(rig, timeouts("dummy"), allow_redone=True)
    logs = rig.logs(tail=10**6)
    assert all(w.alive for w in workers.values()), logs[-6000:]
    assert "Unrecoverable error" not in logs, logs[-6000:]
