"""Encoder passes and decoder calls of the asr stage on files that switch languages: the
spliced files of tests/services/asr/test_multilingual.py (``test``, 3 files, 3.5 min) or of
bench/wild/language.py (``wild``), one pass each, with the model calls counted (encoder rows,
generate calls and rows, language-ID calls, and the seconds in each), the audio's seconds,
and each file's segments (start, end, language, kept, flag, text) written to ``OUT.json`` so
two runs can be compared.

``python -m bench.asr_switch [test|wild] [OUT.json]``: one process, CPU seconds printed per
file (the process's own, ``time.process_time``), so it is cheap enough for a shared machine.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.asr_side import _settings, count_calls
from fixtures.languages import Spliced, splice
from fixtures.longform import SR

WINDOW_SECONDS = 30.0  # what one encoder pass hears, padded


def test_files() -> list[Spliced]:
    """tests/services/asr/test_multilingual.py's ``spliced`` fixture's files."""
    return [splice("ja-en-ja", [("ja", 30.0), ("en", 20.0), ("ja", 30.0)], 0),
            splice("ja-de-ja", [("ja", 30.0), ("de", 20.0), ("ja", 30.0)], 4),
            splice("real-en-ja", [("en-real", 20.0), ("ja", 15.0)], 3)]


def main(which: str = "test", out: str = "") -> None:
    from services.asr.stage import AsrStage

    if which == "test":
        fs = test_files()
    else:
        from bench.wild.language import files

        fs = files(False)
    stats: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    dump: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="onsei-asr-switch-") as d:
        tmp = Path(d)
        stage = AsrStage(_settings(tmp))
        stage.load()
        count_calls(stage, stats)
        stage.transcribe_file("warm", fs[0].audio[:10 * SR])
        total_cpu = 0.0
        for f in fs:
            stats.clear()
            t, c = time.perf_counter(), time.process_time()
            got = stage.transcribe_file(f.name, f.audio)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            total_cpu += cpu
            secs = f.audio.size / SR
            enc = int(stats["encode"][1])
            calls = " ".join(f"{k} {int(v[0])}c/{int(v[1])}r/{v[2]:.2f}s"
                             for k, v in sorted(stats.items()))
            print(f"{f.name}: {secs:.1f} s audio, encoder passes {enc} "
                  f"({enc * WINDOW_SECONDS / secs:.2f}x its audio), {calls}, "
                  f"wall {wall:.1f} s, cpu {cpu:.1f} s, "
                  f"switches {got.extra.get('language_switches', 0)}, "
                  f"retried {got.extra.get('coverage_retried', 0)}", flush=True)
            dump[f.name] = {"encode": enc, "calls": {k: v[:2] for k, v in stats.items()},
                            "segments": [(s.start, s.end, s.language, s.kept, s.reason, s.text)
                                         for s in got.line.segments]}
        print(f"cpu total {total_cpu:.1f} s", flush=True)
    if out:
        Path(out).write_text(json.dumps(dump, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:3])
