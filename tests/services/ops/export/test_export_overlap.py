"""`onsei export` carries ``quality.overlap`` and a cut segment's piece ids (``<id>-<part>``),
applies ``ONSEI_FILTER_MAX_OVERLAP`` again and counts what it removed on the card."""

from __future__ import annotations

from pathlib import Path

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from tests.services.ops.export.synth import Run, Seg, lines_of, quality, write_run


def test_overlap_is_exported_filtered_and_counted(make_settings, tmp_path: Path) -> None:
    s = make_settings(filter_max_overlap=0.3)
    store = open_store(s.output_url, s)
    segs = []
    for i, ov in enumerate((0.0, 0.1, 0.8, 0.9)):
        q = quality().model_copy(update={"overlap": ov})
        segs.append(Seg(f"talk_0000-{i + 1}", 1.0, q, f"talk#s{i % 2}"))
    write_run(store, s, Run(shards={0: segs}, languages={"talk": "en"}))
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    got = {x["id"].split("@")[0]: x for x in lines_of(to)["train"]}  # less any "@<shard>"
    assert sorted(got) == ["talk_0000-1", "talk_0000-2"]
    assert got["talk_0000-2"]["quality"]["overlap"] == 0.1
    card = (to / "README.md").read_text()
    assert "| `overlap>0.3` | export | 2 |" in card and '"max_overlap": 0.3' in card
