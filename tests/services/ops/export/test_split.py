"""The splits are disjoint by source file and by corpus speaker, through chains of them: a file
holding two voices puts both voices, and every file either speaks in, on one side. The same
input and seed give the same bytes; the card counts the voices of each split as the lines
hold them, and says when one group is most of the hours."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from tests.services.ops.export.synth import lines_of, voices_run, write_run
from tests.speakersfiles import write_labels

TWO_VOICES = "000007"  # shard 0's file 7: voice 2, and voice 3 in its last two segments


def _chained(store, s) -> None:
    run, labels = voices_run()
    for seg_id in (f"{TWO_VOICES}_0002", f"{TWO_VOICES}_0003"):
        labels[0][seg_id] = ("spk00000003", 0.8)
    del labels[3]  # shard 3 not linked: its files are groups of their own
    write_run(store, s, run)
    write_labels(store, s, labels)


def _splits_by(root: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    voice, source = defaultdict(set), defaultdict(set)
    for split, rows in lines_of(root).items():
        for x in rows:
            source[x["id"].split("@")[1] + x["id"].rsplit("_", 1)[0]].add(split)
            if "corpus_speaker_id" in x:
                voice[x["corpus_speaker_id"]].add(split)
    return voice, source


def test_voices_chained_through_a_file_share_a_split(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    _chained(open_store(s.output_url, s), s)
    used = set()
    for seed in range(8):
        to = tmp_path / f"set{seed}"
        export(s, s.output_url, str(to),
               plan=SplitPlan(seed=seed, validation_fraction=0.3, test_fraction=0.3))
        voice, source = _splits_by(to)
        assert len(voice) == 5 and all(len(v) == 1 for v in voice.values()), (seed, voice)
        assert all(len(v) == 1 for v in source.values()), (seed, source)
        assert voice["spk00000002"] == voice["spk00000003"]
        used |= {split for v in voice.values() for split in v}
        card = (to / "README.md").read_text()
        for split in ("train", "validation", "test"):
            n = sum(split in v for v in voice.values())
            row = re.search(rf"^\| {split} \|(?:[^|]*\|){{4}} (\d+) \|", card, re.MULTILINE)
            assert row is not None and int(row.group(1)) == n, (split, card)
    assert used == {"train", "validation", "test"}  # the seeds moved voices around


def test_the_same_input_gives_the_same_bytes(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    _chained(open_store(s.output_url, s), s)
    plan = SplitPlan(seed=3, validation_fraction=0.3, test_fraction=0.2)
    for name in ("a", "b"):
        export(s, s.output_url, str(tmp_path / name), plan=plan, workers=1 if name == "a" else 8)
    parts = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.jsonl"))
    assert parts and parts == sorted(p.relative_to(tmp_path / "b")
                                     for p in (tmp_path / "b").rglob("*.jsonl"))
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes()
               for p in parts)


@pytest.mark.parametrize(("validation", "warned"), [("0.3", True), ("0", False)])
def test_one_group_most_of_the_hours_is_a_warning(make_settings, tmp_path: Path, monkeypatch,
                                                  validation: str, warned: bool) -> None:
    from click.testing import CliRunner

    from services.ops.cli import cli

    s = make_settings()
    store = open_store(s.output_url, s)
    run, labels = voices_run()
    # one voice in files 0-5 of every shard: those 24 files are one group, 3/4 of the hours
    labels = {sid: {k: ("spk00000000", 0.9) if int(k[3:6]) < 6 else v for k, v in lab.items()}
              for sid, lab in labels.items()}
    write_run(store, s, run)
    write_labels(store, s, labels)
    monkeypatch.setattr("services.stages.PipelineSettings", lambda: s)
    res = CliRunner().invoke(cli, ["export", "--to", str(tmp_path / "set"),
                                   "--validation-fraction", validation])
    assert res.exit_code == 0, res.output
    card = (tmp_path / "set" / "README.md").read_text()
    assert re.search(r"the largest holds [\d.]+ hours \(7\d\.\d % of the export\)", card)
    assert ("warning: one group" in res.output) == warned
    assert ("**Warning**" in card) == warned
