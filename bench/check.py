"""``python -m bench --check``: the quick asr rows against a committed baseline, so a change that
slows the stage cannot land unseen.

Two cases, each run once on each side in a process of its own (bench/asr_side.py): the bundled
example shard (examples/raw: five short members, one of them Spanish, one silence) and a
3-minute English member (espeak-ng, several voices). Compared with :data:`BASELINE`:

- counts that do not depend on the machine's speed, each within its margin (:data:`MARGINS`):
  encoder audio seconds per audio second, decoder calls per audio hour (generate, language ID),
  page faults and peak RSS of the whole process;
- time only as a ratio against the peer measured in the same run (CPU seconds, user + system):
  within :data:`RATIO_MARGIN` of the baseline's ratio (the machine may be loaded; both sides
  alike).

A count past its margin fails until the baseline is written again on purpose
(``python -m bench.check --write``), with the reason in the commit's message.
``ONSEI_BENCH_PLANT`` (bench/asr_side.py) plants a known regression, to see the guard fail.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.asr_peer import _counts, run_side

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "bench" / "check_baseline.json"
# relative margins: model calls are exact for the same code and audio (a little room for
# another CPU's int8 arithmetic); faults and peak memory vary with the kernel and libraries
MARGINS = {"encoder_audio_s_per_s": 0.05, "decoder_calls_per_hour": 0.10,
           "language_calls_per_hour": 0.10, "faults": 0.30, "peak_mb": 0.20}
RATIO_MARGIN = 0.35  # ours / peer CPU may rise this much over the baseline's before it fails


def _example_files() -> tuple[list[dict], dict[str, np.ndarray]]:
    import tarfile

    from common.shards.audio import decode_audio

    info, audio = [], {}
    with tarfile.open(ROOT / "examples" / "raw" / "shard-000000.tar") as tar:
        for m in tar.getmembers():
            if m.name.endswith(".json"):
                continue
            f = tar.extractfile(m)
            assert f is not None
            key = f"example-{Path(m.name).stem}"
            audio[key] = decode_audio(f.read(), 16000)
            lang = m.name.split("__")[0] if "__" in m.name else "-"
            info.append({"key": key, "set": "example", "language": lang, "reference": "",
                         "seconds": audio[key].size / 16000})
    return info, audio


def _member_files() -> tuple[list[dict], dict[str, np.ndarray]]:
    from bench.asr_sets import EN_VOICES
    from fixtures.longform import make_longform

    f = make_longform("en", 180.0, 30, seed=300, voices=EN_VOICES)
    return ([{"key": "member-0", "set": "member3", "language": "en", "reference": f.reference,
              "seconds": f.seconds}], {"member-0": f.audio})


CASES = {"example": _example_files, "member3": _member_files}


def _save(folder: Path, name: str, files: tuple[list[dict], dict[str, np.ndarray]]) -> Path:
    path = folder / f"{name}.npz"
    np.savez(path, **files[1])
    path.with_suffix(".json").write_text(json.dumps(files[0]))
    return path


def measure(cases: list[str] | None = None, env: dict[str, str] | None = None,
            peer: bool = True) -> dict[str, dict]:
    """Each case's counts (ours) and CPU ratio against the peer, measured now (``peer`` off:
    counts only)."""
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="onsei-bench-check-") as d:
        for name in cases or list(CASES):
            info, audio = CASES[name]()
            path = _save(Path(d), name, (info, audio))
            seconds = sum(f["seconds"] for f in info)
            ours = run_side("ours", path, env or {})
            counts = _counts(ours, seconds)
            out[name] = {"encoder_audio_s_per_s": counts["encoder_audio_s_per_s"],
                         "decoder_calls_per_hour": counts["decoder_calls_per_hour"],
                         "language_calls_per_hour": counts["language_calls_per_hour"],
                         "faults": ours["faults"], "peak_mb": round(ours["peak_mb"], 1)}
            if peer:
                theirs = run_side("peer", path, {})
                out[name]["cpu_ratio"] = round(ours["cpu"] / theirs["cpu"], 3)
                out[name]["wall_ratio"] = round(ours["wall"] / theirs["wall"], 3)
    return out


def compare(now: dict[str, dict], base: dict[str, dict]) -> list[str]:
    """What moved past its margin (empty: the guard passes)."""
    failed = []
    for case, counts in now.items():
        ref = base.get(case)
        if ref is None:
            failed.append(f"{case}: no baseline (python -m bench.check --write)")
            continue
        for key, margin in MARGINS.items():
            b, v = ref[key], counts[key]
            if abs(v - b) > margin * max(abs(b), 1e-9):
                failed.append(f"{case}: {key} {v} vs baseline {b} (margin {margin:.0%})")
        if "cpu_ratio" in counts and counts["cpu_ratio"] > ref["cpu_ratio"] * (1 + RATIO_MARGIN):
            failed.append(f"{case}: CPU {counts['cpu_ratio']}x the peer's vs baseline "
                          f"{ref['cpu_ratio']}x (margin {RATIO_MARGIN:.0%})")
    return failed


def rows(now: dict[str, dict], base: dict[str, dict]) -> list[dict]:
    out = []
    for case, counts in now.items():
        ref = base.get(case, {})
        for key, v in counts.items():
            b = ref.get(key)
            out.append({"name": f"check {case} {key}", "ours": v, "baseline": b,
                        "unit": "vs committed baseline", "ratio":
                        round(v / b, 3) if isinstance(b, (int, float)) and b else None,
                        "goal": f"within {MARGINS[key]:.0%}" if key in MARGINS else
                        (f"<= baseline x {1 + RATIO_MARGIN}" if key == "cpu_ratio" else "")})
    return out


def check() -> tuple[list[dict], list[str]]:
    base = json.loads(BASELINE.read_text())["cases"]
    now = measure()
    return rows(now, base), compare(now, base)


def machine() -> str:
    """The CPU model and core count (the baseline names the machine it was measured on)."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores"


def write() -> None:
    now = measure()
    BASELINE.write_text(json.dumps({
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"), "cases": now}, indent=1) + "\n")


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    else:
        r, failed = check()
        for row in r:
            print(json.dumps(row))
        for f in failed:
            print("FAILED:", f, file=sys.stderr)
        sys.exit(1 if failed else 0)
