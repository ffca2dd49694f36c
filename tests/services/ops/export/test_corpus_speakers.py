"""Export lines carry ``corpus_speaker_id`` and ``corpus_speaker_confidence`` from the
``onsei speakers`` result where it covers the shard, also for lines tokenized before it ran."""

from __future__ import annotations

from pathlib import Path

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.records import corpus_id
from tests.services.ops.export.synth import default_run, lines_of, write_run
from tests.speakersfiles import write_labels


def test_export_lines_carry_the_corpus_speaker(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=2, shards=2)
    write_run(store, s, run)  # tokens lines without corpus speakers
    labels = {seg.id: (f"spk{i:08d}", 0.9) for i, seg in enumerate(run.shards[0])}
    write_labels(store, s, {0: labels})  # shard 1 not linked yet
    export(s, s.output_url, str(tmp_path / "set"), plan=SplitPlan(validation_fraction=0.0))
    rows = {x["id"]: x for x in lines_of(tmp_path / "set")["train"]}
    for seg in run.shards[0]:
        row = rows[corpus_id(seg.id, 0)]
        assert (row["corpus_speaker_id"], row["corpus_speaker_confidence"]) == labels[seg.id]
    assert all("corpus_speaker_id" not in rows[corpus_id(seg.id, 1)] for seg in run.shards[1])
