"""What a lower ``ONSEI_ASR_SEGMENT_MIN_SECONDS`` would let in, beside what it would save.

The asr stage flags a segment under the minimum ``too_short``; here it runs at the old 1 s
(:data:`REFERENCE_MINIMUM`, whatever the default), and every other flag is computed too, so a
segment whose only reason is ``too_short`` is one a lower minimum keeps.
Counted at each candidate minimum (0.5, 0.75 s):

- music alone and effects (fixtures/nonspeech.py: game and desktop tracks, their first minute,
  and the effects joined with pauses): every such segment is a false keep (Whisper's words on a
  blip);
- LibriVox readings under a music bed at 5 dB (bench/wild/music.py's bed): such segments over
  no reference sentence are false keeps, those over one are words saved;
- clean recorded prompts (Asterisk's four voices, lone clips of 0.6-4 s,
  fixtures/short_languages.py): every such segment is clean speech saved.

``python -m bench --only short_segments --json`` or ``python -m bench.short_segments``
(``ONSEI_BENCH_SHORT_CLIPS``: prompts per voice, 30; ``ONSEI_BENCH_SHORT_MUSIC_SECONDS``: each
track's first seconds, 60).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

SR = 16000
MINIMA = (0.5, 0.75)
REFERENCE_MINIMUM = 1.0


def only_short(line: Any, minimum: float) -> list[Any]:
    """The segments of ``line`` that a minimum of ``minimum`` s would keep and 1 s does not."""
    return [s for s in line.segments if s.reason == "too_short" and s.end - s.start >= minimum]


def over_reference(seg: Any, spans: list[tuple[float, float]]) -> bool:
    """Whether at least half of ``seg`` lies over a reference sentence."""
    cover = sum(max(0.0, min(seg.end, b) - max(seg.start, a)) for a, b in spans)
    return cover >= 0.5 * (seg.end - seg.start)


def short_rows(quick: bool) -> list[dict]:
    from bench.filters import _asr_stage
    from bench.wild.music import BEDS_DB, bed_track, under
    from fixtures.longform import real_english, real_longform
    from fixtures.nonspeech import effects, music_tracks
    from fixtures.short_languages import prompt_clips

    per_voice = int(os.environ.get("ONSEI_BENCH_SHORT_CLIPS", "8" if quick else "30"))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="onsei-bench-short-") as d:
        stage = _asr_stage(Path(d), ["ja", "en", "fr", "it", "ru"])
        gap = np.zeros(SR // 2, np.float32)
        fx = np.concatenate([np.concatenate([a, gap]) for _, a in effects()])
        music = float(os.environ.get("ONSEI_BENCH_SHORT_MUSIC_SECONDS", "60"))
        alone = [*music_tracks(max_seconds=music), ("effects", fx)]
        lines = [stage.transcribe_file(n.replace("/", "-"), a).line for n, a in alone]
        minutes = sum(a.size for _, a in alone) / SR / 60
        form = real_longform(real_english(), seconds=60 if quick else 120, seed=11)
        db = min(BEDS_DB)
        bed = under(form.audio, form.spans, bed_track(form.audio.size, seed=11), db)
        bed_line = stage.transcribe_file("bed", bed).line
        clips = [c for c in prompt_clips(per_voice) if c.language != "es"]
        clip_lines = [stage.transcribe_file(c.name.replace(".", "-"), c.audio).line
                      for c in clips]
        for m in MINIMA:
            got = [s for line in lines for s in only_short(line, m)]
            texts = sorted({s.text.strip() for s in got})
            rows.append({"name": f"too_short at {m} s: segments it would keep on music alone "
                                 f"and effects ({minutes:.0f} min; texts: "
                                 f"{', '.join(texts)[:80] or 'none'})",
                         "ours": len(got), "baseline": 0, "ratio": None, "unit": "segments",
                         "goal": "0", "met": not got})
            b = only_short(bed_line, m)
            wrong = [s for s in b if not over_reference(s, form.spans)]
            rows.append({"name": f"too_short at {m} s: segments it would keep on LibriVox under "
                                 f"a music bed at {db} dB ({len(b) - len(wrong)} over a "
                                 f"sentence, {len(wrong)} over none)",
                         "ours": len(wrong), "baseline": 0, "ratio": None,
                         "unit": "segments over no speech", "goal": "0", "met": not wrong})
            saved = [s for line in clip_lines for s in only_short(line, m)]
            dropped = sum(1 for line in clip_lines for s in line.segments
                          if "too_short" in (s.reason or ""))
            rows.append({"name": f"too_short at {m} s: clean prompt segments it would save "
                                 f"({len(saved)} of the {dropped} flagged too_short at 1 s, "
                                 f"{len(clips)} lone clips of 0.6-4 s)",
                         "ours": len(saved), "baseline": dropped, "ratio": None,
                         "unit": "segments saved", "goal": "report", "met": None})
    return rows


ROWS = [short_rows]

if __name__ == "__main__":
    for row in short_rows(bool(os.environ.get("QUICK"))):
        print(json.dumps(row))
