"""The asr stage against faster-whisper's ``BatchedInferencePipeline`` as shipped, whole process.

Each side runs in a process of its own (bench/asr_side.py) over the same decoded audio (the
held-out sets of bench/asr_sets.py), in alternating order over several rounds; the parent reads
each process's rusage: wall, CPU (user + system), system seconds, page faults, peak RSS. Rows:

- ``defaults``: the stage at its defaults against the peer at its own (beam 5, its VAD, its
  language ID first); goals wall and CPU <= 0.9x, page faults <= 1.2x, WER / CER <= 1.0x per set
  (never worse by more than 0.005);
- ``beam 1``: both greedy (``ONSEI_ASR_BEAM_SIZE=1``, the peer's ``beam_size=1``), labelled;
- counts that do not depend on the machine: encoder audio seconds per audio second (rows x 30 s)
  and decoder calls (generate) per audio hour, for both sides.

``python -m bench.asr_peer [dev|held|hard] [--quick] [--rounds N] [--sets NAME,...] [--config
NAME:ENV,...]`` prints the rows as JSON lines, and the per-file error table of each side (a
regression on one file shows). A config's ``PYTHONPATH`` is the checkout its side runs from
(``--config before:PYTHONPATH=/tmp/before`` with a ``git worktree`` of the code before): the
code before and after side by side in one run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.asr_sets import load, saved
from fixtures.longform import error_rate, kana_cer

ROOT = Path(__file__).resolve().parents[1]
WINDOW_SECONDS = 30.0  # one encoder row

# (label, the stage's environment, the peer's environment)
CONFIGS: list[tuple[str, dict[str, str], dict[str, str]]] = [
    ("defaults", {}, {}),
    ("beam 1", {"ONSEI_ASR_BEAM_SIZE": "1"}, {"ONSEI_BENCH_PEER_BEAM": "1"}),
]


def _env(extra: dict[str, str]) -> dict[str, str]:
    # every default on: no ONSEI_* or thread cap inherited (the suite sets some), only ``extra``
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ONSEI_", "MALLOC_")) and k != "OMP_NUM_THREADS"}
    if "ONSEI_BENCH_CACHE" in os.environ:
        base["ONSEI_BENCH_CACHE"] = os.environ["ONSEI_BENCH_CACHE"]
    if "ONSEI_ASR_MODEL" in os.environ:
        base["ONSEI_ASR_MODEL"] = os.environ["ONSEI_ASR_MODEL"]
    return {**base, "PYTHONPATH": str(ROOT), **extra}


def run_side(side: str, sets: Path, env: dict[str, str]) -> dict:
    """One side in a process of its own: its texts and model calls, and its whole process's
    wall, CPU, system seconds, page faults and peak RSS."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        out_path = Path(out.name)
    try:
        t = time.perf_counter()
        # run from the checkout the config names: ``-m`` puts the working directory first on
        # the path, ahead of PYTHONPATH, so ROOT's code would run whatever the config said
        code = Path(env["PYTHONPATH"].split(os.pathsep)[0]) if env.get("PYTHONPATH") else ROOT
        proc = subprocess.Popen([sys.executable, "-m", "bench.asr_side", side, str(sets),
                                 str(out_path)], env=_env(env), cwd=code,
                                stderr=subprocess.PIPE)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"asr side {side} failed: {err[-3000:]}")
        got = json.loads(out_path.read_text())
    finally:
        out_path.unlink(missing_ok=True)
    return {**got, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "sys": ru.ru_stime,
            "faults": ru.ru_minflt + ru.ru_majflt, "peak_mb": ru.ru_maxrss / 1024}


def compare(sets: Path, ours_env: dict[str, str], peer_env: dict[str, str],
            rounds: int) -> dict[str, list[dict]]:
    """Both sides ``rounds`` times, alternating which goes first (load drift hits both)."""
    runs: dict[str, list[dict]] = {"ours": [], "peer": []}
    for r in range(rounds):
        order = ("ours", "peer") if r % 2 == 0 else ("peer", "ours")
        for side in order:
            runs[side].append(run_side(side, sets, ours_env if side == "ours" else peer_env))
    return runs


def file_errors(info: list[dict], texts: dict[str, str], kept: set[str],
                score: Callable[[str, str, str], float] = error_rate) -> dict[str, float]:
    """Each kept-language file's error (``score``: WER, CER for Japanese); files of other
    languages: 1.0 when text was kept (not dropped), else 0.0."""
    out = {}
    for f in info:
        text = texts.get(f["key"], "")
        if f["language"] in kept:
            out[f["key"]] = round(score(f["language"], f["reference"], text), 4)
        else:
            out[f["key"]] = 1.0 if text else 0.0
    return out


def _kana(language: str, reference: str, hypothesis: str) -> float:
    return kana_cer(reference, hypothesis)


def set_errors(info: list[dict], texts: dict[str, dict[str, str]], kept: set[str],
               label: str) -> list[dict]:
    """One row per set, kept language and metric (WER; CER and Kana-CER for Japanese): the
    mean over its files ours / the peer's, the goal (<= 1.0x, never worse by more than 0.005)
    and the per-file table (a regression on one file shows)."""
    out = []
    metrics = {"WER": error_rate, "CER": error_rate, "Kana-CER": _kana}
    errs = {m: {k: file_errors(info, texts[k], kept, f) for k in texts} for m, f in
            metrics.items() if m != "Kana-CER" or any(i["language"] == "ja" for i in info)}
    for set_name in dict.fromkeys(f["set"] for f in info):
        for lang in sorted({f["language"] for f in info if f["set"] == set_name} & kept):
            keys = [f["key"] for f in info if f["set"] == set_name and f["language"] == lang]
            for metric in ("CER", "Kana-CER") if lang == "ja" else ("WER",):
                e = errs[metric]
                o = statistics.fmean(e["ours"][k] for k in keys)
                p = statistics.fmean(e["peer"][k] for k in keys)
                out.append({"name": f"asr {set_name} {lang} {metric} ({label})",
                            "set": set_name, "language": lang, "ours": round(o, 4),
                            "baseline": round(p, 4), "unit": metric,
                            "ratio": round(o / p, 3) if p else None,
                            "goal": "<= 1.0 (or +0.005)", "met": o <= p or o - p <= 0.005,
                            "files": {k: [e["ours"][k], e["peer"][k]] for k in keys}})
    return out


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _counts(run: dict, audio_seconds: float) -> dict[str, float]:
    calls = run["calls"]
    hours = audio_seconds / 3600
    return {"encoder_audio_s_per_s": round(calls.get("encode", [0, 0])[1] * WINDOW_SECONDS
                                           / audio_seconds, 3),
            "decoder_calls_per_hour": round(calls.get("generate", [0, 0])[0] / hours, 1),
            "language_calls_per_hour": round(calls.get("detect_language", [0, 0])[0] / hours, 1),
            "align_calls_per_hour": round(calls.get("align", [0, 0])[0] / hours, 1)}


def rows(label: str, info: list[dict], runs: dict[str, list[dict]],
         kept: set[str]) -> list[dict]:
    audio_seconds = sum(f["seconds"] for f in info)
    minutes = audio_seconds / 60
    name = f"asr vs BatchedInferencePipeline ({label}; {minutes:.1f} min, whole process"
    out = []
    for key, unit, goal in (("wall", "s wall", "<= 0.9"), ("cpu", "s CPU (user+sys)", "<= 0.9"),
                            ("sys", "s system", ""), ("faults", "page faults", "<= 1.2"),
                            ("peak_mb", "MB peak RSS", "")):
        o, p = _median(runs["ours"], key), _median(runs["peer"], key)
        out.append({"name": f"{name}) {key}", "ours": round(o, 2), "baseline": round(p, 2),
                    "unit": f"{unit} (median of {len(runs['ours'])})",
                    "ratio": round(o / p, 3) if p else None, "goal": goal})
    co, cp = (_counts(runs[k][0], audio_seconds) for k in ("ours", "peer"))
    for key, v in co.items():
        out.append({"name": f"{name}) {key}", "ours": v, "baseline": cp[key], "unit": key,
                    "ratio": round(v / cp[key], 3) if cp[key] else None, "goal": "count"})
    texts = {k: runs[k][0]["texts"] for k in runs}
    out += set_errors(info, texts, kept, label)
    errs = {k: file_errors(info, texts[k], kept) for k in runs}
    other = [f["key"] for f in info if f["language"] not in kept]
    out.append({"name": f"asr non-target files dropped ({label})",
                "ours": sum(errs["ours"][k] == 0 for k in other),
                "baseline": sum(errs["peer"][k] == 0 for k in other), "unit": f"of {len(other)}",
                "ratio": None, "goal": "all"})
    return out


def run(split: str, quick: bool, rounds: int,
        configs: list[tuple[str, dict[str, str], dict[str, str]]] | None = None,
        only: tuple[str, ...] = ()) -> list[dict]:
    sets = saved(split, quick, only)
    info, _ = load(sets)
    kept = {"en", "ja"}
    load_avg = os.getloadavg()[0]
    out: list[dict] = []
    for label, ours_env, peer_env in configs or CONFIGS:
        runs = compare(sets, ours_env, peer_env, rounds)
        for r in rows(f"{label}, {split}", info, runs, kept):
            r["load"] = round(load_avg, 2)
            out.append(r)
    return out


def sweep(split: str, quick: bool,
          configs: list[tuple[str, dict[str, str], dict[str, str]]],
          only: tuple[str, ...] = ()) -> Iterator[dict]:
    """Accuracy of the stage under each config (one run each) against the peer at its
    defaults (one run, its texts kept under the sets' cache: the same texts each time): error
    per set and per file, and the run's CPU seconds and faults (one run: a rough cost). Each
    config's run is kept beside it (``ours-<sets>-<config>.json``: texts and flagged segments)."""
    from bench.asr_sets import cache_dir

    sets = saved(split, quick, only)
    info, _ = load(sets)
    kept = {"en", "ja"}
    cached = cache_dir() / f"peer-{sets.stem}.json"
    if not cached.is_file():
        cached.write_text(json.dumps(run_side("peer", sets, {})))
    peer = json.loads(cached.read_text())
    hours = sum(f["seconds"] for f in info) / 3600
    for label, env, _ in configs:
        ours = run_side("ours", sets, env)
        (cache_dir() / f"ours-{sets.stem}-{label}.json").write_text(json.dumps(ours))
        for r in set_errors(info, {"ours": ours["texts"], "peer": peer["texts"]}, kept, label):
            yield {"config": label, **r}
        yield {"config": label, "cpu": round(ours["cpu"], 1), "peer_cpu": round(peer["cpu"], 1),
               "cpu_s_per_audio_hour": round(ours["cpu"] / hours),
               "peer_cpu_s_per_audio_hour": round(peer["cpu"] / hours),
               "faults": ours["faults"], "calls": ours["calls"], "load": os.getloadavg()[0]}


def stage_vs_peer(quick: bool) -> list[dict]:
    return run("held", quick, 2 if quick else 3)


ROWS = [stage_vs_peer]


def _parse(argv: list[str]) -> tuple[str, bool, int, list | None, tuple[str, ...]]:
    split, quick, rounds, configs, only = "held", False, 3, None, ()
    it = iter(argv)
    for a in it:
        if a == "--quick":
            quick = True
        elif a == "--sets":  # NAME,NAME: only these sets of the split (cached apart)
            only = tuple(x for x in next(it).split(",") if x)
        elif a == "--rounds":
            rounds = int(next(it))
        elif a == "--config":  # NAME=K=V,K=V (the stage's env; the peer at its defaults)
            label, _, spec = next(it).partition(":")
            env = dict(kv.split("=", 1) for kv in spec.split(",") if kv)
            configs = (configs or []) + [(label, env, {})]
        else:
            split = a
    return split, quick, rounds, configs, only


if __name__ == "__main__":
    split, quick, rounds, configs, only = _parse([a for a in sys.argv[1:] if a != "--sweep"])
    if "--sweep" in sys.argv[1:]:
        for row in sweep(split, quick, configs or CONFIGS, only):
            print(json.dumps(row), flush=True)
        sys.exit(0)
    for config in configs or CONFIGS:  # each config's rows as soon as it is measured
        for row in run(split, quick, rounds, [config], only):
            print(json.dumps(row), flush=True)
