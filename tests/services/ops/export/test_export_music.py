"""`onsei export` carries ``quality.music``, applies ``ONSEI_FILTER_MAX_MUSIC`` again (the
default 0.5) and counts what it removed on the card."""

from __future__ import annotations

from pathlib import Path

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from tests.services.ops.export.synth import Run, Seg, lines_of, quality, write_run


def test_music_is_exported_filtered_and_counted(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    segs = []
    for i, music in enumerate((0.0, 0.2, 0.7, 1.0, None)):
        q = quality() if music is None else quality().model_copy(update={"music": music})
        segs.append(Seg(f"show_{i:04d}", 1.0, q, "show#s0"))
    write_run(store, s, Run(shards={0: segs}, languages={"show": "en"}))
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    got = {x["id"].split("@")[0]: x for x in lines_of(to)["train"]}
    assert sorted(got) == ["show_0000", "show_0001", "show_0004"]
    assert got["show_0001"]["quality"]["music"] == 0.2
    assert "music" not in got["show_0004"]["quality"]  # not scored: kept, nothing written
    card = (to / "README.md").read_text()
    assert "| `music>0.5` | export | 2 |" in card and '"max_music": 0.5' in card
