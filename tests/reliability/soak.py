"""Soak: N shards through three real worker processes while faults are injected for M minutes.

    python -m tests.reliability.soak --shards 50 --minutes 10 [--pipeline dummy|real]

Faults, one every ``--every`` seconds at random: kill -9 of a worker (a new one is started),
Redis killed and restarted empty (then ``enqueue-shards`` over the range again, as an operator
would), a burst of S3 500s / resets / slow reads through the fault proxy. Then the faults stop,
the range is enqueued once more, and the run is audited. Prints lost / duplicated /
dead-lettered / redone counts; exits 1 if anything was lost or duplicated.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.conftest import free_port
from tests.faultproxy import FaultProxy
from tests.reliability.rig import REDELIVER_SECONDS, Rig
from tests.reliability.servers import wait_port


def _moto() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_port(port, 30):
        proc.kill()
        raise SystemExit("moto server did not start")
    return proc, f"http://127.0.0.1:{port}"


def _s3_burst(proxy: FaultProxy, seconds: float) -> None:
    for f in ({"mode": "status", "status": 500, "rate": 0.3}, {"mode": "reset", "rate": 0.15},
              {"mode": "delay", "delay": 2.5, "rate": 0.3, "methods": {"GET"}}):
        mode = f.pop("mode")
        proxy.set_fault(mode, **f)
        time.sleep(seconds / 3)
    proxy.clear()


def _report(rig: Rig, html: Path) -> None:
    """The run report of the soak's output root (read over S3, like an operator would)."""
    from services.ops.report.collect import collect
    from services.ops.report.render import render_html
    from tests.harness import settings_from

    s = settings_from(rig.direct_env)
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(render_html(collect(s.output_url, s)), encoding="utf-8")
    print(f"report: {html}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--pipeline", choices=("dummy", "real"), default="dummy")
    ap.add_argument("--every", type=float, default=8.0, help="seconds between faults")
    ap.add_argument("--drain-minutes", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--html", default=None, help="write the onsei run report of the soak here")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    moto, endpoint = _moto()
    root = Path(tempfile.mkdtemp(prefix="onsei-soak-"))
    faults: Counter = Counter()
    try:
        with FaultProxy(endpoint) as proxy:
            rig = Rig.create(root, endpoint, pipeline=a.pipeline, shards=a.shards,
                             member_bytes=50_000, s3_for_workers=proxy.url,
                             ONSEI_DUMMY_SECONDS="0.5", ONSEI_S3_READ_TIMEOUT="1",
                             ONSEI_S3_CONNECT_TIMEOUT="1", ONSEI_MAX_TASK_FAILURES="8",
                             ONSEI_VISIBILITY_TIMEOUT=REDELIVER_SECONDS[a.pipeline])
            try:
                rig.start_workers(3)
                print(rig.enqueue().strip(), flush=True)
                end = time.monotonic() + a.minutes * 60
                while time.monotonic() < end:
                    time.sleep(a.every * rng.uniform(0.5, 1.5))
                    kind = rng.choices(["kill9", "redis", "s3"], weights=[5, 1, 3])[0]
                    faults[kind] += 1
                    if kind == "kill9" and rig.workers:
                        rig.kill9(rng.choice(rig.workers))
                        rig.start_workers(1)
                    elif kind == "redis":
                        rig.redis.restart_wiped()
                        time.sleep(2)
                        rig.enqueue()
                    else:
                        _s3_burst(proxy, 6.0)
                    print(f"{time.strftime('%H:%M:%S')} fault {kind}; faults so far "
                          f"{dict(faults)}", flush=True)
                proxy.clear()
                rig.enqueue()  # reconcile once more after the last fault
                missing = rig.wait_all(a.drain_minutes * 60)
                audit = rig.audit()
                if a.html:
                    _report(rig, Path(a.html))
            finally:
                rig.close()
    finally:
        moto.terminate()
    lost = len(audit.lost) + len(audit.missing_items)
    dup = len(audit.duplicated)
    print(f"shards {a.shards} ({a.pipeline}), faults {dict(faults)}, segments {audit.segments}")
    print(f"lost {lost}  duplicated {dup}  dead-lettered {len(audit.dead_lettered)}  "
          f"redone {len(audit.redone)}  ledger-disagreements {len(audit.disagree)}  "
          f"not-done {len(missing)}")
    for name in ("lost", "missing_items", "duplicated", "dead_lettered", "disagree", "redone"):
        items = getattr(audit, name)
        if items:
            print(f"  {name}: {items[:20]}")
    return 1 if lost or dup or audit.disagree else 0


if __name__ == "__main__":
    sys.exit(main())
