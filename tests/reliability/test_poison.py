"""Poison messages (issue 25 item 1): a real asr worker (dummy stages) on a private Redis is fed
list entries that are no message, messages celery cannot decode, and task messages with bad
arguments, then one good message. Before the fix the first bad entry ended the worker
("Unrecoverable error") and was lost; shard id ``1.5`` or ``true`` ran shard 1, ``force: "no"``
counted as true, ``until: "bogus"`` transcribed the shard and left a stale running entry, and
``1e400``, ``null`` or missing arguments left only a log line; shard ``10**30`` was tried three
times and dead-lettered.

Now every one is refused with a record under ``_ledger/_failed/asr/_invalid-*`` saying why, its
task (where there is one) ends as FAILURE in the task events (what Flower shows), nothing runs
shard 1, and the worker goes on to do shard 0.
"""

from __future__ import annotations

import base64
import json

from common.queue.publish import _Template
from services.stages import make_app
from tests.harness import settings_from, wait_until
from tests.reliability.events import TaskEvents
from tests.reliability.records import failure_docs
from tests.reliability.rig import Rig

EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
GOOD_KW = {"until": "asr", "force": False}


def _entry(tmpl: _Template, body: bytes | None = None, **changes) -> str:
    """A real message as kombu stores it, with its body (raw JSON text, base64-encoded as
    kombu does) or fields replaced (None: removed)."""
    msg = json.loads(tmpl.render(0))
    if body is not None:
        msg["body"] = base64.b64encode(body).decode()
    for k, v in changes.items():
        if v is None:
            msg.pop(k, None)
        else:
            msg[k] = v
    return json.dumps(msg)


def _raw_body(tmpl: _Template, text: str) -> str:
    msg = json.loads(tmpl.render(0))
    msg["body"] = text
    return json.dumps(msg)


def _body(args: str, kwargs: dict) -> bytes:
    return f"[{args}, {json.dumps(kwargs)}, {json.dumps(EMBED)}]".encode()


def _poison(tmpl: _Template) -> dict[str, tuple[str, str]]:
    """name -> (list entry, what its record's reason must say)."""
    unknown = json.loads(tmpl.render(0))
    unknown["headers"]["task"] = "onsei.nosuch.process_shard"
    return {
        "not json": ("this is not JSON {", "not JSON"),
        "json list": ("[1, 2]", "JSON list"),
        "no properties": (_entry(tmpl, properties=None), "no properties"),
        "body not base64": (_raw_body(tmpl, "@@@ not base64 @@@x"),
                            "not valid base64"),
        "body not json": (_entry(tmpl, body=b"not json at all"), "body is not JSON"),
        "unknown task": (json.dumps(unknown), "unknown task"),
        "shard 1.5": (_entry(tmpl, _body("[1.5]", GOOD_KW)), "shard id 1.5"),
        "shard true": (_entry(tmpl, _body("[true]", GOOD_KW)), "shard id True"),
        "shard 1e400": (_entry(tmpl, _body("[1e400]", GOOD_KW)), "shard id inf"),
        "shard null": (_entry(tmpl, _body("[null]", GOOD_KW)), "shard id None"),
        "shard 10**30": (_entry(tmpl, _body(f"[{10**30}]", GOOD_KW)),
                         f"is over {2**63 - 1}"),
        "no args": (_entry(tmpl, _body("[]", GOOD_KW)), "expected one shard id"),
        "until bogus": (_entry(tmpl, _body("[1]", {"until": "bogus", "force": False})),
                        "until 'bogus' is not a stage"),
        "force no": (_entry(tmpl, _body("[1]", {"until": "asr", "force": "no"})),
                     "force 'no' is not true or false"),
    }


def test_poison_messages_are_refused_recorded_and_the_worker_goes_on(tmp_path, s3_endpoint):
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=2)
    try:
        app = make_app("poison-test", settings_from(rig.direct_env))
        with app.connection_for_write() as conn:
            tmpl = _Template(app, conn.default_channel, "asr", GOOD_KW)
        cases = _poison(tmpl)
        r = rig.redis.client()
        with TaskEvents(rig.redis.url) as events:
            (worker,) = rig.start_workers(1, queues="asr")
            for entry, _ in cases.values():
                r.lpush("asr", entry)  # BRPOP takes from the right: in this order
            r.lpush("asr", tmpl.render(0))  # then one good message: shard 0
            led = rig._ledger()
            done = wait_until(lambda: led.is_done("asr", 0), 90, workers=[worker])
            assert done, rig.logs()[-6000:]
            invalid = lambda: [f for f in failure_docs(led, "asr") if f["shard_id"] is None]
            assert wait_until(lambda: len(invalid()) >= len(cases), 30), \
                (invalid(), rig.logs()[-6000:])
            failed = lambda: [e for e in events.of_type("task-failed")
                              if "InvalidMessage" in e.get("exception", "")]
            n_tasks = sum(1 for k in cases if k.startswith(("shard", "no args", "until", "force")))
            assert events.wait(lambda: len(failed()) >= n_tasks, 20), events.events[-20:]
        recs = invalid()
        assert len(recs) == len(cases), [x["reason"] for x in recs]
        reasons = [x["reason"] for x in recs]
        for name, (_, words) in cases.items():
            assert any(words in x for x in reasons), (name, words, reasons)
        assert all(x["dead_lettered"] and x["message"] for x in recs)
        keys = [f["key"] for f in failure_docs(led, "asr")]
        assert len(keys) == len(cases) and all("/_invalid-" in k for k in keys), keys
        assert not led.is_done("asr", 1) and led.failed_ids("asr") == set()  # shard 1 never ran
        assert worker.alive, worker.log_text()[-6000:]
        log = worker.log_text()
        assert "Unrecoverable error" not in log, log[-6000:]
        assert wait_until(lambda: r.llen("asr") == 0 and r.hlen("unacked") == 0, 10)  # no loop
        assert r.hlen("onsei:running:asr") == 0  # no stale running entry
    finally:
        rig.close()


def test_deeply_nested_messages_are_refused_and_the_worker_goes_on(tmp_path, s3_endpoint):
    """A list entry of 200,000 nested ``[`` ended the worker (RecursionError parsing it); a
    real envelope whose body nests 100,000 deep ended it too, after kombu had recorded it as
    unacknowledged, so it came back and ended every restarted worker (a crash loop). Now both
    are refused with a record saying why, and the worker goes on to do shard 0."""
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline="dummy", shards=1)
    try:
        app = make_app("poison-deep-test", settings_from(rig.direct_env))
        with app.connection_for_write() as conn:
            tmpl = _Template(app, conn.default_channel, "asr", GOOD_KW)
        r = rig.redis.client()
        (worker,) = rig.start_workers(1, queues="asr")
        r.lpush("asr", "[" * 200_000, _entry(tmpl, body=b"[" * 100_000), tmpl.render(0))
        led = rig._ledger()
        assert wait_until(lambda: led.is_done("asr", 0), 90, workers=[worker]), \
            rig.logs()[-6000:]
        invalid = lambda: [f for f in failure_docs(led, "asr") if f["shard_id"] is None]
        assert wait_until(lambda: len(invalid()) >= 2, 30, workers=[worker]), rig.logs()[-6000:]
        reasons = sorted(x["reason"] for x in invalid())
        assert len(reasons) == 2 and all("nested deeper than the parser can go" in x
                                         for x in reasons), reasons
        assert any("body is not JSON" in x for x in reasons), reasons
        assert worker.alive and "Unrecoverable error" not in worker.log_text(), \
            worker.log_text()[-6000:]
        assert wait_until(lambda: r.llen("asr") == 0 and r.hlen("unacked") == 0, 10)  # no loop
    finally:
        rig.close()
