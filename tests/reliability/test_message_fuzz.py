"""The message-path fuzz through a real asr worker (dummy stages, private Redis and S3).

Hypothesis draws list entries (tests/common/queue/entries.py: random bytes, any JSON, nesting
up to 300,000 deep, wrong types in every field of a real message and in its body) plus the
size bounds' worst cases (an entry over the parse bound, a message over the entry bound); each
that a worker must refuse is pushed onto the queue, then one good message. The worker must stay
up, leave one refused-message record for each distinct entry, let every entry go (nothing left
in the queue or unacknowledged, so nothing comes back to loop) and then do the good shard.
Before the envelope checks the first deep entry ended the worker (RecursionError).

The campaign here is ~250 entries (under a minute); ``-m slow`` runs 2,000.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kombu.utils.json import loads as kombu_loads

from common.queue.envelope import MAX_ENTRY_CHARS, MAX_PARSE_CHARS, bounded_loads
from common.queue.poison import _raw_of
from common.queue.publish import _Template
from services.stages import make_app
from tests.common.queue import entries
from tests.harness import settings_from, wait_until
from tests.reliability.records import failure_docs
from tests.reliability.rig import Rig

FAMILIES = st.one_of(entries.random_bytes, entries.any_json, entries.deep_nesting,
                     entries.envelope_types(), entries.body_types)
WORST = [entries._huge(MAX_PARSE_CHARS + 1, "entry"), entries._huge(MAX_ENTRY_CHARS + 1, "body"),
         entries._deep("list", 200_000, "entry", False),
         entries._deep("list", 100_000, "body", False)]


def _campaign(tmp_path, s3_endpoint, examples: int, timeout: float) -> None:
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=2)
    try:
        r = rig.redis.client()
        (worker,) = rig.start_workers(1, queues="asr")
        kinds: set[str] = set()  # one record per distinct message, as the worker names it

        def push(text: str) -> None:
            key = _raw_of(bounded_loads(text, kombu_loads))
            if key in kinds or entries.read(text, task_check=True) is None:
                return  # a message celery takes is not what this campaign is about
            kinds.add(key)
            r.lpush("asr", text)

        for text in WORST:
            push(text)

        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(FAMILIES)
        def fuzz(text: str) -> None:
            push(text)

        fuzz()
        app = make_app("fuzz-test", settings_from(rig.direct_env))
        with app.connection_for_write() as conn:
            r.lpush("asr", _Template(app, conn.default_channel, "asr",
                                     entries.GOOD_KW).render(1))
        led = rig._ledger()
        assert wait_until(lambda: led.is_done("asr", 1), timeout, workers=[worker]), \
            rig.logs()[-6000:]
        invalid = lambda: [f for f in failure_docs(led, "asr") if f["shard_id"] is None]
        assert wait_until(lambda: len(invalid()) >= len(kinds), 60, workers=[worker]), \
            (len(invalid()), len(kinds), rig.logs()[-6000:])
        assert wait_until(lambda: r.llen("asr") == 0 and r.hlen("unacked") == 0, 20), \
            (r.llen("asr"), r.hlen("unacked"))
        assert len(invalid()) == len(kinds)
        assert worker.alive and "Unrecoverable error" not in worker.log_text(), \
            worker.log_text()[-6000:]
        assert not led.is_done("asr", 0) and led.failed_ids("asr") == set()  # nothing ran
        assert len(kinds) >= examples // 2, len(kinds)  # most draws were refusable
    finally:
        rig.close()


def test_fuzzed_messages_through_a_real_worker(tmp_path, s3_endpoint):
    _campaign(tmp_path, s3_endpoint, examples=250, timeout=120)


@pytest.mark.slow
def test_fuzzed_messages_through_a_real_worker_long(tmp_path, s3_endpoint):
    _campaign(tmp_path, s3_endpoint, examples=2000, timeout=600)
