"""``onsei status [--output URL] [--range A-B] [--json]``: per stage done / queued / running /
failed, hours, throughput over the last hour, slowest and failed shards; GPU-hours, cost per
output hour and, with a range, the projection to finish it (services/ops/costs.py).

Done and failed come from the ledger (the truth); queued and running from Redis (a mirror).
With Redis down or empty the ledger part still prints, and the output says so.
"""

from __future__ import annotations

import heapq
import json
import time
from collections.abc import Collection
from typing import Any

import click

from common.ledger.pack import Trimmed
from common.redact import redact_text
from common.settings import Settings
from services.ops.options import output_option, output_settings
from services.stages import PIPELINE, STAGES, PipelineSettings, open_ledger


def collect(settings: Settings, ids: range | None = None, top: int = 5) -> dict[str, Any]:
    from common.ledger.index import load_done
    from common.queue.tracking import Tracker
    from services.ops.costs import summary

    ledger = open_ledger(settings)
    tracker = Tracker(settings)
    redis_ok = tracker.available()
    now = time.time()
    done_sets: dict[str, Collection[int]] = {}  # per stage: its done shards in the range
    out: dict[str, Any] = {"output": redact_text(settings.output_url),
                           "range": None if ids is None else [ids.start, ids.stop - 1],
                           "redis": redis_ok, "stages": {}}

    def in_range(i: int) -> bool:
        return ids is None or i in ids

    records: dict[str, list[Trimmed]] = {}
    for stage in STAGES:
        # one listing (the done count); record bodies from the local cache, the store's
        # rollups, and a GET only for what neither has (common/ledger/index.py)
        loaded = load_done(ledger, stage, ids)
        done_sets[stage] = loaded.done
        recs = records[stage] = loaded.records
        done_ids = loaded.done
        failures = ledger.failures(stage)
        fails = [f for f in failures if f.shard_id is not None and in_range(f.shard_id)
                 and f.shard_id not in done_ids]
        recent = [r for r in recs if (r.finished_at or 0) >= now - 3600]
        st: dict[str, Any] = {
            "done": len(done_ids),
            "failed": len(fails),
            "dead_lettered": sum(1 for f in fails if f.dead_lettered),
            "corrupt": [{"shard_id": i, "why": why} for i, why in sorted(loaded.corrupt.items())]
            + [{"key": k, "why": why} for k, why in sorted(failures.corrupt.items())],
            "audio_hours_in": round(sum(r.audio_seconds_in or 0 for r in recs) / 3600, 4),
            "audio_hours_out": round(sum(r.audio_seconds_out or 0 for r in recs) / 3600, 4),
            "last_hour": {
                "shards": len(recent),
                "audio_hours_in": round(
                    sum(r.audio_seconds_in or 0 for r in recent) / 3600, 4),
            },
            "slowest": [{"shard_id": r.shard_id, "wall_seconds": r.wall_seconds,
                         "host": r.host}
                        for r in heapq.nlargest(top, recs, key=lambda r: r.wall_seconds or 0)],
            "failures": [{"shard_id": f.shard_id, "reason": f.reason,
                          "attempts": f.attempts, "dead_lettered": f.dead_lettered}
                         for f in sorted(fails, key=lambda f: -f.failed_at)[:2 * top]],
            "queued": None, "reserved": None, "running": None,
        }
        if redis_ok:
            running = {i: v for i, v in tracker.running(stage).items() if in_range(i)}
            st["queued"] = tracker.queue_length(stage)  # the whole queue: messages carry no range
            st["reserved"] = tracker.unacked_count(stage)
            st["running"] = len(running)
            st["running_shards"] = [{"shard_id": i, "host": v.get("host"),
                                     "seconds": round(now - v.get("started", now), 1)}
                                    for i, v in sorted(running.items())[:top]]
            st["sick"] = [{"node": n, "reason": v.get("reason"),
                           "seconds": round(now - float(v.get("at", now)), 1)}
                          for n, v in sorted(tracker.sick(stage).items())]
        out["stages"][stage] = st
    out["cost"] = summary(records, settings, None if ids is None else len(ids), now)
    from common.storage.snapshot import ReadOnce
    from services.ops.corpus import progress
    from services.ops.status.dedup import index_progress

    # each corpus step the pipeline declares, over the shards done at the stage it follows;
    # one read of each result for all the figures drawn from it
    results = ReadOnce(ledger.store)
    out["corpus"] = {c.name: progress(c, results, done_sets[c.after]).as_dict()
                     for c in PIPELINE.corpus_steps}
    dedup = PIPELINE.corpus_step("dedup")  # its own figures: duplicates, clusters
    out["dedup"] = index_progress(results, done_sets[dedup.after])
    if redis_ok:
        out["redis_empty"] = all(not (s["queued"] or s["reserved"] or s["running"])
                                 for s in out["stages"].values())
    return out


def render(data: dict[str, Any]) -> None:
    """Every value from the run (a URL, a reason, a host) goes through ``common.display``:
    escaped inside markup, its control characters shown, never obeyed."""
    from rich.console import Console
    from rich.table import Table

    from common.display import markup as m
    from common.display import visible

    con = Console(width=max(Console().width, 110), emoji=False, highlight=False)

    def plain(line: str) -> None:
        con.print(visible(line), markup=False)

    title = f"onsei status: {m(data['output'])}"
    if data["range"]:
        title += f"  range {data['range'][0]}-{data['range'][1]}"
    t = Table(title=title)
    # short headers: fits 80 columns. "1h": finished in the last hour (throughput).
    for col in ("stage", "done", "queued", "resv", "run", "failed", "dead", "h in", "h out",
                "1h shards", "1h h in"):
        t.add_column(col, justify="right" if col != "stage" else "left")
    na = "?"
    for stage, s in data["stages"].items():
        t.add_row(m(stage), str(s["done"]), na if s["queued"] is None else str(s["queued"]),
                  na if s["reserved"] is None else str(s["reserved"]),
                  na if s["running"] is None else str(s["running"]), str(s["failed"]),
                  str(s["dead_lettered"]), f"{s['audio_hours_in']:.2f}",
                  f"{s['audio_hours_out']:.2f}", str(s["last_hour"]["shards"]),
                  f"{s['last_hour']['audio_hours_in']:.2f}")
    con.print(t)
    from services.ops.costs import render_lines

    for line in render_lines(data["cost"]):
        plain(line)
    from services.ops.corpus import StepProgress
    from services.ops.status.dedup import render_line

    for name, step in data.get("corpus", {}).items():  # a step with its own line shows that
        plain(render_line(data[name]) if name == "dedup" and name in data else
              StepProgress(**{k: v for k, v in step.items() if k != "behind"}).line())
    if not data["redis"]:
        con.print("[yellow]Redis unreachable: queued/running unknown; done and failed are from "
                  "the ledger alone.[/]")
    elif data.get("redis_empty"):
        plain("Redis holds no queued or running work (idle, or flushed: run "
              "`enqueue-shards` over the range to re-enqueue what the ledger lacks).")
    for stage, s in data["stages"].items():
        for c in s.get("corrupt", []):  # not done: the next enqueue-shards redoes the shard
            what = f"shard {c['shard_id']}" if "shard_id" in c else c["key"]
            con.print(f"[red]{m(stage)} {m(what)}: corrupt record, not counted[/] "
                      f"({m(c['why'])})")
        for f in s["failures"]:
            dead = "dead-lettered" if f["dead_lettered"] else f"attempt {f['attempts']}"
            con.print(f"[red]{m(stage)} shard {m(f['shard_id'])}[/] ({m(dead)}): "
                      f"{m(f['reason'])}")
        if s["slowest"]:
            slow = ", ".join(f"{x['shard_id']} ({x['wall_seconds']}s)" for x in s["slowest"])
            plain(f"{stage} slowest: {slow}")
    for stage, s in data["stages"].items():  # workers stopped for their node's fault
        for x in s.get("sick", []):
            con.print(f"[red]{m(stage)} worker {m(x['node'])} stopped "
                      f"{x['seconds'] / 60:.0f} min ago[/]: {m(x['reason'])}")


@click.command()
@output_option()
@click.option("--range", "range_", default=None, help="shard ids A-B (both included)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def status(output_url: str | None, range_: str | None, as_json: bool) -> None:
    """Per stage: done, queued, running, failed; audio hours; throughput; slow/failed shards."""
    from services.ops.enqueue import parse_range

    settings = PipelineSettings(**output_settings(output_url))
    data = collect(settings, parse_range(range_, settings.max_range) if range_ else None)
    if as_json:
        click.echo(json.dumps(data, indent=1))
    else:
        render(data)
