"""Per-call profile of the asr bench's files (bench/asr.py): model calls, rows and seconds of
each kind (encode, generate, align, detect_language), ours then the peer, file by file, and our
decoder runs (windows, beam, languages given, no-repeat n-gram size: coverage retries and their
loop re-decodes show here).

``python -m bench.asr_calls [synthetic|real] [FILE_INDEX,...]``: one process, one pass, so it
is cheap enough for a shared machine; walls of one pass are noisy, the call counts are not.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.asr import _settings, real_set, synthetic_set
from bench.asr_side import count_calls
from fixtures.longform import error_rate, make_longform, peer_transcribe


def main(which: str = "synthetic", only: str = "") -> None:
    import services.asr.multilingual as ml
    from services.asr.stage import AsrStage

    stats: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    runs: list[tuple[int, int | None, list[str] | None, int]] = []
    run = ml.WindowDecoder.run

    def logged(self: Any, windows: Any, beam: Any = None, *a: Any, **kw: Any) -> Any:
        langs = kw.get("languages")
        runs.append((len(windows), beam, sorted(set(langs)) if langs else None,
                     kw.get("no_repeat", 0)))
        return run(self, windows, beam, *a, **kw)

    ml.WindowDecoder.run = logged  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="onsei-asr-calls-") as d:
        stage = AsrStage(_settings(Path(d)))
        stage.load()
        count_calls(stage, stats)
        assert stage._loaded is not None
        model = stage._loaded.model
        s = stage.settings
        files = synthetic_set(False) if which == "synthetic" else real_set(False)
        warm = make_longform("en", 20.0, 3, seed=9).audio
        stage.transcribe_file("warm", warm)
        peer_transcribe(model, warm, s.asr_languages, s.asr_batch_size, s.asr_beam_size,
                        s.asr_language_threshold, word_timestamps=s.asr_word_timestamps)
        for i in [int(x) for x in only.split(",")] if only else range(len(files)):
            f = files[i]
            for side in ("ours", "peer"):
                stats.clear()
                runs.clear()
                t = time.perf_counter()
                if side == "ours":
                    out = stage.transcribe_file(f"f{i}", f.audio)
                    text = ("" if f.language == "ja" else " ").join(x.text for x in out.line.kept)
                    extra = {k: v for k, v in out.extra.items() if v}
                else:
                    text = peer_transcribe(model, f.audio, s.asr_languages, s.asr_batch_size,
                                           s.asr_beam_size, s.asr_language_threshold,
                                           word_timestamps=s.asr_word_timestamps).text
                    extra = {}
                wall = time.perf_counter() - t
                err = (f"{error_rate(f.language, f.reference, text):.4f}"
                       if f.language in s.asr_languages else "-")
                calls = " ".join(f"{k} {int(v[0])}c/{int(v[1])}r/{v[2]:.2f}s"
                                 for k, v in sorted(stats.items()))
                print(f"{which} f{i} {f.language} {side}: wall {wall:.2f} s, error {err}, {calls}"
                      f"{', ' + str(extra) if extra else ''}"
                      f"{', decoder runs ' + str(runs) if side == 'ours' else ''}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
