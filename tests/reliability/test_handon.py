"""A Redis outage at the exact moment a stage hands a finished shard on (issue 25 item 2).

The asr worker writes shard 0's done record, then (``ONSEI_FAULT_PAUSE_AFTER_DONE``) stops
before the hand-on; the test takes the private redis-server down (SIGKILL; AOF fsynced per
write: an outage, not a wipe), lets the hand-on run into it, keeps Redis down 15 s from its
first failed send and starts it again. Before the fix the send failed, the ack was lost with
the connection and enhance waited for the visibility timeout (6 h by default, 600 s here).
Now: enhance is done within a minute of Redis coming back, every stage exactly once, and the
asr message whose ack was lost is gone from Redis's unacknowledged set (it would have come back
after the visibility timeout).
"""

from __future__ import annotations

import time

from tests.harness import wait_until
from tests.reliability.rig import Rig

DOWN_SECONDS = 15  # the hand-on waits 0.5 s doubling to 5 s: several tries at the cap


def test_handon_survives_redis_down_at_that_moment(tmp_path, s3_endpoint):
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=1,
                     persist_redis=True, ONSEI_FAULT_PAUSE_AFTER_DONE="asr:0")
    try:
        workers = {s: rig.start_workers(1, queues=s)[0] for s in rig.chain}
        rig.enqueue()
        paused = rig.root / "paused-asr-0"
        assert wait_until(paused.exists, 90, workers=workers.values()), rig.logs()[-4000:]
        led = rig._ledger()
        assert led.is_done("asr", 0) and not led.is_done("enhance", 0)
        rig.redis.stop(hard=True)
        (rig.root / "resume-asr-0").touch()  # the hand-on now meets a broker that is gone
        # the outage is counted from the hand-on's first failed send, not from the resume: a
        # worker slow to resume under load would otherwise meet a shorter outage, or none
        met = wait_until(lambda: "broker unreachable" in rig.logs(tail=20_000), 60,
                         interval=0.1, workers=workers.values())
        assert met, rig.logs()[-4000:]
        time.sleep(DOWN_SECONDS)
        assert not led.is_done("enhance", 0)
        rig.redis.start()
        back = time.monotonic()
        handed = wait_until(lambda: led.is_done("enhance", 0), 60, workers=workers.values())
        waited = time.monotonic() - back
        assert handed, f"enhance not done 60 s after Redis came back\n{rig.not_done({0})}"
        missing = rig.wait_all(60)
        assert not missing, rig.not_done(missing)
        rig.audit().assert_exactly_once()  # each stage's done record written once
        logs = rig.logs(tail=10**6)
        assert all(w.alive for w in workers.values()), logs[-6000:]
        assert "handed on after" in logs, logs[-6000:]
        # its ack was lost with the connection: settled by the task, so it never comes back
        assert rig.redis.client().hlen("unacked") == 0, rig.broker_state()
        print(f"enhance done {waited:.1f} s after Redis came back (down {DOWN_SECONDS} s)")
    finally:
        rig.close()
