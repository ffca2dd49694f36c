"""Each stage as users run it, whole process: ``onsei run --stages <stage>`` on the bundled example.

One child process per stage (asr, then enhance on its output, then tokenize with a small
random-weight NeuCodec built from the real classes, since the released weights need the hub);
the parent reads each child's rusage through ``os.wait4``: wall, user CPU, system seconds, page
faults (minor + major) and peak RSS, everything the process did (imports, model load, fetch,
write), not only the model calls. Each figure also per audio hour of the stage's input, from the
stage's own done record. The example is ~28 s of audio, so load and start-up dominate the
per-hour figures: they are a ceiling for a short shard, not a long-shard rate.

``python -m bench --only stage_process --json`` prints one row per stage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples"
STAGES = ("asr", "enhance", "tokenize")
PER_HOUR = ("wall_s", "user_s", "sys_s", "faults")


def stage_env(extra: dict[str, str]) -> dict[str, str]:
    """The example's offline settings and nothing inherited from ONSEI_* (the suite sets some)."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ONSEI_", "MALLOC_")) and k != "OMP_NUM_THREADS"}
    return {**base, "PYTHONPATH": str(ROOT), "ONSEI_CONFIG": str(EXAMPLE / "offline.yaml"),
            **extra}


def run_stage(stage: str, output: Path, env: dict[str, str]) -> dict[str, Any]:
    """``onsei run --stages stage`` in a child of its own; its whole process's rusage."""
    cmd = [sys.executable, "-m", "services.ops.cli", "run", "--input", str(EXAMPLE / "raw"),
           "--output", str(output), "--range", "0-0", "--stages", stage]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    # read stderr before waiting: a full pipe would block the child
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    # tokenize keeps one done record per codec, one folder deeper
    records = sorted((output / "_ledger" / stage).rglob("shard-000000.json"))
    if proc.returncode != 0 or not records:
        raise RuntimeError(f"onsei run --stages {stage} failed: {err[-3000:]}")
    done = json.loads(records[0].read_text())
    return {"wall_s": wall, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
            "faults": ru.ru_minflt + ru.ru_majflt, "peak_mb": ru.ru_maxrss / 1024,
            "audio_s": float(done["audio_seconds_in"])}


def stage_row(stage: str, m: dict[str, Any], note: str = "") -> dict[str, Any]:
    """One row: the process figures, each (but peak RSS) also per audio hour of input."""
    hours = m["audio_s"] / 3600
    per_hour = {k: round(m[k] / hours, 1) for k in PER_HOUR} if hours > 0 else {}
    cpu = m["user_s"] + m["sys_s"]
    return {"name": f"stage process: {stage}, onsei run on the example{note}",
            "ours": round(cpu / hours, 1) if hours > 0 else None, "baseline": None,
            "ratio": None, "goal": "reported", "unit": "CPU s per audio hour (user + sys)",
            "stage": stage, "audio_s": round(m["audio_s"], 3),
            **{k: round(m[k], 3) for k in ("wall_s", "user_s", "sys_s")},
            "faults": int(m["faults"]), "peak_mb": round(m["peak_mb"], 1),
            "per_audio_hour": per_hour}


def _codec(folder: Path) -> Path:
    from fixtures.factories.neucodec import build_small_neucodec

    return build_small_neucodec(folder / "neucodec")


def measure(stages: tuple[str, ...] = STAGES) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-stage-") as d:
        out = Path(d) / "out"
        for stage in stages:
            extra: dict[str, str] = {}
            note = ""
            if stage == "tokenize":
                extra = {"ONSEI_TOKENIZE_NEUCODEC_MODEL": str(_codec(Path(d))),
                         "ONSEI_TOKENIZE_DEVICE": "cpu"}
                note = " (small random-weight NeuCodec)"
            rows.append(stage_row(stage, run_stage(stage, out, stage_env(extra)), note))
    return rows


def stage_rows(quick: bool) -> list[dict[str, Any]]:
    return measure(STAGES[:2] if quick else STAGES)


ROWS = [stage_rows]

if __name__ == "__main__":
    for r in measure(tuple(sys.argv[1:]) or STAGES):
        print(json.dumps(r))
