"""The export's splits are disjoint by corpus speaker as well as by source file, a test split is
there when asked, and the caps on hours per speaker and per source are deterministic and hold;
the card counts speakers (a histogram of hours per speaker) and what each cap left out."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from common.storage import open_store
from services.ops.export.caps import SOURCE, SPEAKER, Caps
from services.ops.export.run import ExportError, export
from services.ops.export.write import SplitPlan
from tests.services.ops.export.synth import VOICES, lines_of, voices_run, write_run
from tests.speakersfiles import write_labels


def _split_of(root: Path, field: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for split, rows in lines_of(root).items():
        for x in rows:
            value = x.get(field) or x["id"].rsplit("_", 1)[0]
            out[value].add(split)
    return out


@pytest.fixture
def corpus(make_settings):
    s = make_settings()
    store = open_store(s.output_url, s)
    run, labels = voices_run()
    write_run(store, s, run)
    return s, store, run, labels


def test_a_corpus_speaker_is_in_one_split_with_a_test_split(corpus, tmp_path: Path) -> None:
    s, store, run, labels = corpus
    plan = SplitPlan(seed=4, validation_fraction=0.3, test_fraction=0.3)
    export(s, s.output_url, str(tmp_path / "unlinked"), plan=plan)
    # without the corpus result, one voice's files land in several splits (the test can fail)
    by_file = _split_of(tmp_path / "unlinked", "source")
    voice_splits = defaultdict(set)
    for src, splits in by_file.items():
        voice_splits[int(src[3:]) % VOICES] |= splits
    assert any(len(v) > 1 for v in voice_splits.values())
    write_labels(store, s, labels)
    res = export(s, s.output_url, str(tmp_path / "linked"), plan=plan)
    by_speaker = _split_of(tmp_path / "linked", "corpus_speaker_id")
    assert len(by_speaker) == VOICES and all(len(v) == 1 for v in by_speaker.values())
    used = {next(iter(v)) for v in by_speaker.values()}
    assert len(used) >= 2 and (tmp_path / "linked" / "test").is_dir() == ("test" in used)
    assert sum(res.written.lines.values()) == sum(map(len, run.shards.values()))
    card = (tmp_path / "linked" / "README.md").read_text()
    assert "test fraction 0.3" in card and "## Speakers" in card and f"{VOICES} speakers" in card


def _kept_seconds(root: Path, key: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for rows in lines_of(root).values():
        for x in rows:
            out[x.get(key) or x["id"].rsplit("_", 1)[0]] += x["duration_seconds"]
    return out


def test_caps_hold_and_are_deterministic(corpus, tmp_path: Path) -> None:
    s, store, run, labels = corpus
    write_labels(store, s, labels)
    cap_h = 6.0 / 3600  # six seconds of each voice (each has 4 shards x ~6 s)
    plan = SplitPlan(validation_fraction=0.0, caps=Caps(hours_per_speaker=cap_h))
    a = export(s, s.output_url, str(tmp_path / "a"), plan=plan)
    export(s, s.output_url, str(tmp_path / "b"), plan=plan)
    assert lines_of(tmp_path / "a") == lines_of(tmp_path / "b")
    kept = _kept_seconds(tmp_path / "a", "corpus_speaker_id")
    assert len(kept) == VOICES
    assert all(6.0 - 1.4 < v <= 6.0 + 1e-9 for v in kept.values()), kept  # filled, not over
    total = sum(s_.seconds for segs in run.shards.values() for s_ in segs)
    assert a.written.capped.seconds[SPEAKER] == pytest.approx(total - sum(kept.values()))
    other = export(s, s.output_url, str(tmp_path / "c"),
                   plan=SplitPlan(seed=9, validation_fraction=0.0, caps=plan.caps))
    assert {x["id"] for x in lines_of(tmp_path / "c")["train"]} != \
        {x["id"] for x in lines_of(tmp_path / "a")["train"]}
    assert other.written.capped.segments[SPEAKER] > 0
    card = (tmp_path / "a" / "README.md").read_text()
    assert f"| `--max-hours-per-speaker` | {cap_h:g} | {a.written.capped.segments[SPEAKER]} |" \
        in card


def test_source_cap(corpus, tmp_path: Path) -> None:
    s, _, run, _ = corpus
    res = export(s, s.output_url, str(tmp_path / "set"),
                 plan=SplitPlan(validation_fraction=0.0, caps=Caps(hours_per_source=2.5 / 3600)))
    kept = _kept_seconds(tmp_path / "set", "source")
    assert len(kept) == sum(len({x.source for x in segs}) for segs in run.shards.values())
    assert all(v <= 2.5 + 1e-9 for v in kept.values()) and res.written.capped.segments[SOURCE]


def test_the_card_histogram_counts_each_speaker_once(corpus, tmp_path: Path) -> None:
    s, store, _, labels = corpus
    write_labels(store, s, labels)
    export(s, s.output_url, str(tmp_path / "set"), plan=SplitPlan(validation_fraction=0.0))
    card = (tmp_path / "set" / "README.md").read_text()
    # voices 0-2 speak in two files a shard (~38 s each), 3-4 in one (~19 s)
    assert "| \\< 0.01 h | 2 |" in card and "| 0.01-0.1 h | 3 |" in card
    assert "| spk00000000 |" not in card and "`spk00000000`" in card


@pytest.mark.parametrize(("plan", "why"), [
    (SplitPlan(validation_fraction=0.5, test_fraction=0.5), "below 1"),
    (SplitPlan(test_fraction=-0.1), "--test-fraction -0.1"),
    (SplitPlan(caps=Caps(hours_per_speaker=0.0)), "--max-hours-per-speaker 0.0"),
    (SplitPlan(caps=Caps(hours_per_source=float("nan"))), "--max-hours-per-source nan"),
])
def test_bad_plans_are_refused_before_anything_is_written(corpus, tmp_path: Path, plan,
                                                         why: str) -> None:
    s = corpus[0]
    with pytest.raises(ExportError, match=why.replace("+", r"\+")):
        export(s, s.output_url, str(tmp_path / "set"), plan=plan)
    assert not (tmp_path / "set").exists()


def test_cli_flags(corpus, tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from services.ops.cli import cli

    s = corpus[0]
    monkeypatch.setattr("services.stages.PipelineSettings", lambda: s)
    to = str(tmp_path / "set")
    res = CliRunner().invoke(cli, ["export", "--to", to, "--test-fraction", "0.4",
                                   "--validation-fraction", "0.2", "--seed", "4",
                                   "--max-hours-per-source", str(2.5 / 3600)])
    assert res.exit_code == 0, res.output
    assert "--max-hours-per-source: " in res.output and ", test " in res.output
    res = CliRunner().invoke(cli, ["export", "--to", to, "--test-fraction", "0.995"])
    assert res.exit_code == 1 and "below 1" in res.output
