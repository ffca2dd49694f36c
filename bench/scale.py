"""Scale bench: N shards through asr -> enhance -> tokenize on real Celery fleets, then the
control-plane costs at ledger scale (goals from docs/operations.md).

    python -m bench.scale --shards 50000 [--workers 2] [--stage-ms 2] [--timeout 7200]
    python -m bench --only scale            (2,000 shards; --quick: 200)

Pipeline: model-free stages of fixed cost (bench/scale_app.py: the real Stage contract, task
body, executor, ledger and local store), ``--workers`` worker processes per fleet on a
private loopback Redis. Then, on a ledger of ``--ledger-shards`` (50,000; topped up with copies
of the run's own done records when the run was smaller): enqueue cold and with 49,000 done,
``onsei status`` time and the S3 requests it would make, done-record listing cost, Redis memory
per queued shard, and Flower's memory with 3 x 50,000 tasks seen.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import click

from bench.scale_ledger import CountingStore, fill_ledger, hide_shards, status_rows, time_status
from bench.scale_servers import MemoryPeak, Redis, flower_memory
from common.settings import Settings
from services.stages import STAGES, PipelineSettings, open_ledger, output_key

REPO = Path(__file__).resolve().parents[1]


# --- the pipeline run --------------------------------------------------------------------------
@dataclass
class Run:
    shards: int
    seconds: float = 0.0
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    audit: dict[str, object] = field(default_factory=dict)
    redis_peak: int = 0
    enqueue_seconds: float = 0.0


def _settings(root: Path, redis_url: str, out: str = "out") -> Settings:
    return PipelineSettings(input_url=str(root / "raw"), output_url=str(root / out),
                            scratch_dir=str(root / "scratch"), broker_url=redis_url,
                            visibility_timeout=3600)


def _env(s: Settings, stage_ms: float) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"ONSEI_INPUT_URL": s.input_url, "ONSEI_OUTPUT_URL": s.output_url,
                "ONSEI_SCRATCH_DIR": s.scratch_dir,
                "ONSEI_BROKER_URL": s.broker_url.get_secret_value(),
                "ONSEI_VISIBILITY_TIMEOUT": str(s.visibility_timeout),
                "ONSEI_SCALE_STAGE_MS": str(stage_ms), "OMP_NUM_THREADS": "1",
                "ONSEI_NODE_TYPE": "cpu",  # records carry a price: status shows a cost
                "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", "")})
    return env


def _fleet_cpu(procs: list[subprocess.Popen], workers: int) -> dict[str, float]:
    """CPU seconds (user + system) each fleet's processes have used so far: the worker, its
    pool, everything it runs. Taken just before the stop, so shutdown is not counted."""
    import psutil

    out: dict[str, float] = {}
    for k, p in enumerate(procs):
        stage = STAGES[k // workers]
        try:
            top = psutil.Process(p.pid)
            tree = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for q in tree:
            try:
                c = q.cpu_times()
                out[stage] = out.get(stage, 0.0) + c.user + c.system
            except psutil.NoSuchProcess:
                continue
    return out


def _start_workers(env: dict[str, str], workers: int, log_dir: Path) -> list[subprocess.Popen]:
    procs = []
    for stage in STAGES:
        for k in range(workers):
            log = open(log_dir / f"{stage}-{k}.log", "wb")  # noqa: SIM115 - lives with the proc
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "bench.scale_app", "worker", "-Q", stage,
                 "-c", "1", "-n", f"{stage}{k}@%h", "--loglevel", "WARNING",
                 "--without-gossip", "--without-mingle", "--without-heartbeat"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
    return procs


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def run_pipeline(root: Path, redis: Redis, shards: int, workers: int, stage_ms: float,
                 timeout: float) -> Run:
    from services.ops.enqueue import enqueue

    s = _settings(root, redis.url(0))
    raw = root / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for i in range(shards):
        (raw / s.shard_name(i)).write_bytes(b"raw\n")
    (root / "logs").mkdir(exist_ok=True)
    run = Run(shards)
    peak = MemoryPeak(redis)
    peak.start()
    t0 = time.perf_counter()
    enqueue(s, range(shards), "asr", "tokenize")
    run.enqueue_seconds = time.perf_counter() - t0
    procs = _start_workers(_env(s, stage_ms), workers, root / "logs")
    t0 = time.monotonic()
    try:
        key = "onsei:scale:tokenize"
        last_print = 0.0
        while time.monotonic() - t0 < timeout:
            n = int(redis.client.hget(key, "tasks") or 0)
            if n >= shards:
                break
            if time.monotonic() - last_print > 30:
                last_print = time.monotonic()
                q = {st: redis.client.llen(st) for st in STAGES}
                print(f"  {time.monotonic() - t0:6.0f}s tokenize done {n}/{shards}, queues {q}",
                      file=sys.stderr, flush=True)
            time.sleep(1)
        run.seconds = time.monotonic() - t0
        cpu = _fleet_cpu(procs, workers)
    finally:
        _stop(procs)
        peak.stop_flag.set()
        peak.join()
    run.redis_peak = max(peak.peak, int(redis.client.info("memory")["used_memory_peak"]))
    for stage in STAGES:
        h = {k.decode(): float(v) for k, v in redis.client.hgetall(f"onsei:scale:{stage}").items()}
        first = redis.client.zscore(f"onsei:scale:{stage}:first", "t") or 0.0
        last = redis.client.zscore(f"onsei:scale:{stage}:last", "t") or 0.0
        n = h.get("tasks", 0.0) or 1.0
        span = max(1e-9, last - first)
        run.stages[stage] = {
            "tasks": h.get("tasks", 0.0), "process_calls": h.get("process_calls", 0.0),
            "task_ms": 1000 * h.get("task_seconds", 0.0) / n,
            "stage_ms": 1000 * h.get("stage_seconds", 0.0) / n,
            "span_s": span, "tasks_per_s": h.get("tasks", 0.0) / span,
            # what a shard costs the fleet: its processes' wall over the span, per task
            "fleet_ms_per_task": 1000 * workers * span / n,
            # CPU the fleet spent per task, Celery and worker start-up included: the cost of
            # the orchestration without the waits for a shared, overloaded CPU
            "cpu_ms_per_task": 1000 * cpu.get(stage, 0.0) / n,
        }
    run.audit = audit(s, shards, run)
    return run


def audit(s: Settings, shards: int, run: Run) -> dict[str, object]:
    """Every shard done in every stage, each stage's work done once, each output complete."""
    ledger = open_ledger(s)
    ids = range(shards)
    lost = {st: len(set(ids) - ledger.done_ids(st, ids)) for st in STAGES}
    twice = {st: int(run.stages[st]["process_calls"]) - (shards - lost[st]) for st in STAGES}
    failed = {st: len(ledger.failures(st)) for st in STAGES}
    bad = 0
    out = Path(s.output_url)
    for i in ids:
        p = out / output_key("tokenize", s, i)
        want = f"raw\nasr {i}\nenhance {i}\ntokenize {i}\n".encode()
        if not p.is_file() or p.read_bytes() != want:
            bad += 1
    ok = not any(lost.values()) and not any(twice.values()) and not bad
    return {"lost": lost, "twice": twice, "failure_records": failed, "bad_outputs": bad,
            "exactly_once": ok}


# --- control plane at ledger scale -----------------------------------------------------------
def control_plane(root: Path, redis: Redis, run: Run, ledger_shards: int) -> dict[str, object]:
    from services.ops.enqueue import enqueue

    res: dict[str, object] = {"ledger_shards": ledger_shards}
    ids = range(ledger_shards)
    # enqueue cold: an empty ledger, an empty Redis DB; its memory is what queued shards cost
    s_cold = _settings(root, redis.url(1), out="empty")
    before = redis.used()
    t0 = time.perf_counter()
    p = enqueue(s_cold, ids, "asr", "tokenize")
    res["enqueue_cold_s"] = time.perf_counter() - t0
    res["redis_bytes_per_queued_shard"] = (redis.used() - before) / max(1, p.enqueued)
    redis.client.execute_command("SELECT", 1)
    redis.client.flushdb()
    redis.client.execute_command("SELECT", 0)

    s = _settings(root, redis.url(2), out="out")
    fill_ledger(s, ledger_shards)
    led = open_ledger(s, store=CountingStore.open(s))
    t0 = time.perf_counter()
    n_done = len(led.done_ids("tokenize", ids))
    res["list_done_s_per_stage"] = time.perf_counter() - t0
    res["list_requests_per_stage"] = led.store.counts.get("LIST", 0)
    t0 = time.perf_counter()
    led.done_records("tokenize")
    res["read_all_done_records_s_per_stage"] = time.perf_counter() - t0
    res["done"] = n_done

    with hide_shards(s, range(ledger_shards - 1000, ledger_shards)):
        t0 = time.perf_counter()
        p = enqueue(s, ids, "asr", "tokenize")
        res["enqueue_49k_done_s"] = time.perf_counter() - t0
        res["enqueue_49k_done_enqueued"] = p.enqueued
    redis.client.execute_command("SELECT", 2)
    redis.client.flushdb()
    redis.client.execute_command("SELECT", 0)

    res.update(time_status(s, ids))  # first call ever / another machine's first / repeated
    return res


# --- rows --------------------------------------------------------------------------------------
def measure(shards: int, ledger_shards: int, workers: int, stage_ms: float, timeout: float,
            flower_tasks: int) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix="onsei-scale-"))
    redis = Redis(root)
    try:
        run = run_pipeline(root, redis, shards, workers, stage_ms, timeout)
        cp = control_plane(root, redis, run, ledger_shards)
    finally:
        redis.stop()
        shutil.rmtree(root, ignore_errors=True)
    flower = {"default_100000": flower_memory(flower_tasks, 100_000),
              "bounded_10000": flower_memory(flower_tasks, 10_000)}
    return {"shards": shards, "workers_per_fleet": workers, "stage_ms": stage_ms,
            "run_seconds": run.seconds, "enqueue_run_s": run.enqueue_seconds,
            "stages": run.stages, "audit": run.audit, "redis_peak_bytes": run.redis_peak,
            "control_plane": cp, "flower_tasks": flower_tasks, "flower_mb": flower}


def rows(m: dict) -> list[dict]:
    n, cp = m["shards"], m["control_plane"]
    out = []
    for stage, st in m["stages"].items():
        out.append({"name": f"scale {n:,}: {stage} overhead per shard (task - stage's own)",
                    "ours": round(st["task_ms"] - st["stage_ms"], 2), "baseline": None,
                    "ratio": None, "goal": "<= 20 ms", "unit": "ms"})
        out.append({"name": f"scale {n:,}: {stage} CPU per shard, all the fleet's processes",
                    "ours": round(st["cpu_ms_per_task"], 2), "baseline": None,
                    "ratio": None, "goal": "", "unit": "ms"})
        out.append({"name": f"scale {n:,}: {stage} fleet tasks/s ({m['workers_per_fleet']} "
                            f"procs; fleet ms per shard)", "ours": round(st["tasks_per_s"], 1),
                    "baseline": round(st["fleet_ms_per_task"], 1), "ratio": None, "goal": "",
                    "unit": "tasks/s | ms"})
    L = cp["ledger_shards"]
    out += [
        {"name": f"scale {n:,}: audit (lost, twice, bad outputs)", "unit": "",
         "ours": "exactly once" if m["audit"]["exactly_once"] else json.dumps(m["audit"]),
         "baseline": None, "ratio": None, "goal": "nothing lost, nothing twice"},
        {"name": f"Redis memory per queued shard (enqueue {L:,})", "unit": "bytes",
         "ours": round(cp["redis_bytes_per_queued_shard"]), "baseline": None, "ratio": None,
         "goal": "<= 2048"},
        {"name": f"Redis used_memory peak during the {n:,}-shard run", "unit": "MB",
         "ours": round(m["redis_peak_bytes"] / 1e6, 1), "baseline": None, "ratio": None,
         "goal": ""},
        {"name": f"enqueue-shards --range 0-{L - 1}: cold | 49,000 done", "unit": "s",
         "ours": round(cp["enqueue_cold_s"], 2), "baseline": round(cp["enqueue_49k_done_s"], 2),
         "ratio": None, "goal": "< 5 s"},
        *status_rows(cp, L),
        {"name": f"done-record listing, one stage, {L:,} ids: time | LIST requests",
         "unit": "s | n", "ours": round(cp["list_done_s_per_stage"], 3),
         "baseline": cp["list_requests_per_stage"], "ratio": None, "goal": ""},
        {"name": f"Flower state memory, {m['flower_tasks']:,} tasks seen: "
                 f"max_tasks 100,000 (default) | 10,000", "unit": "MB",
         "ours": round(m["flower_mb"]["default_100000"], 1),
         "baseline": round(m["flower_mb"]["bounded_10000"], 1), "ratio": None,
         "goal": "bounded (FLOWER_MAX_TASKS)"},
    ]
    return out


def scale(quick: bool) -> list[dict]:
    n = int(os.environ.get("ONSEI_SCALE_SHARDS") or (200 if quick else 2000))
    m = measure(n, 5_000 if quick else 50_000, 2, 2.0, 3600, 15_000 if quick else 150_000)
    return rows(m)


ROWS = [scale]


@click.command()
@click.option("--shards", default=50_000, show_default=True, help="shards through the pipeline")
@click.option("--ledger-shards", default=50_000, show_default=True,
              help="ledger size for enqueue / status / listing")
@click.option("--workers", default=2, show_default=True, help="worker processes per fleet")
@click.option("--stage-ms", default=2.0, show_default=True, help="fixed cost of each stage")
@click.option("--timeout", default=7200.0, show_default=True, help="stop the run after this")
@click.option("--flower-tasks", default=150_000, show_default=True)
@click.option("--json-out", type=click.Path(dir_okay=False), default=None)
def main(shards: int, ledger_shards: int, workers: int, stage_ms: float, timeout: float,
         flower_tasks: int, json_out: str | None) -> None:
    """The scale run; prints the rows and (with --json-out) every figure."""
    m = measure(shards, ledger_shards, workers, stage_ms, timeout, flower_tasks)
    if json_out:
        Path(json_out).write_text(json.dumps(m, indent=1, default=str))
    for r in rows(m):
        click.echo(f"{r['name']}: {r['ours']} {r['unit']}"
                   + (f" | {r['baseline']}" if r["baseline"] is not None else "")
                   + (f"  (goal {r['goal']})" if r["goal"] else ""))


if __name__ == "__main__":
    main()
