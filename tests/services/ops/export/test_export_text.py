"""An exported line carries both text forms (``text`` and ``text_spoken`` with the Japanese
reading and accent) and the card names the normaliser that wrote ``text_spoken``."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from tests.services.ops.export.synth import default_run, lines_of, write_run

EN = {"text_spoken": "five dollars", "text_spoken_by": "WeTextProcessing 1.2.0"}
JA = {"text_spoken": "三個", "text_spoken_by": "pyopenjtalk-plus 0.4.1", "reading": "サンコ",
      "accent": "サ'ンコ"}


@pytest.mark.parametrize("tokens", [True, False])
def test_lines_and_card_carry_the_spoken_forms(make_settings, tmp_path: Path,
                                               tokens: bool) -> None:
    s = make_settings(output_url=str(tmp_path / "out"))
    run = default_run(files_per_shard=3, shards=1)
    for seg in run.shards[0]:
        if seg.id.startswith("000000"):
            continue  # written before text_spoken: none
        seg.forms = JA if run.languages[seg.source] == "ja" else EN
    write_run(open_store(s.output_url, s), s, run, tokens=tokens)
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0), tokens=tokens)
    lines = {x["id"].split("@")[0]: x for x in lines_of(to)["train"]}
    assert lines["000001_0000"]["text"] == "text of 000001_0000"
    assert {k: lines["000001_0000"].get(k) for k in EN} == EN
    assert {k: lines["000002_0001"].get(k) for k in JA} == JA
    assert "text_spoken" not in lines["000000_0000"]
    card = (to / "README.md").read_text()
    assert "| WeTextProcessing 1.2.0 | 3 |" in card
    assert "| pyopenjtalk-plus 0.4.1 | 3 |" in card
    assert "| none (no normaliser for the language, or written before text_spoken) | 3 |" in card
