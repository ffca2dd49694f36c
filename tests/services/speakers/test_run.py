"""``onsei speakers`` end to end on real voices: one id per voice across files and shards, a
second run with new shards that keeps every label given, the state in an S3 store that another
machine (an empty work directory) carries on from, and a crash's unrecorded part dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.storage import open_store
from services.speakers.parts import PARTS
from services.speakers.result import SUMMARY_KEY, SpeakersReader, SpeakersSummary, labels_key
from services.speakers.run import NothingToLink, SpeakerLinker
from services.speakers.settings import SpeakersSettings
from tests.services.speakers import helpers as h
from tests.system_packages import POCKETSPHINX, needs

pytestmark = needs(POCKETSPHINX)

# shard -> source file -> (voice, line) per segment: the LibriVox reader in three files over
# three shards, the cards speaker in two, two fillets voices taking turns in one
FIRST = {0: {"book-a": [("librivox", 0), ("librivox", 1)],
             "call-a": [("cards", 0), ("cards", 1), ("cards", 2)]},
         1: {"book-b": [("librivox", 2), ("librivox", 3)]}}
SECOND = {2: {"book-c": [("librivox", 4)], "call-b": [("cards", 3), ("cards", 4)],
              "elk": [("fillets-l", 0), ("fillets-p", 0), ("fillets-l", 1), ("fillets-p", 1)]}}


def _settings(url: str, tmp: Path) -> SpeakersSettings:
    return SpeakersSettings(output_url=url, scratch_dir=str(tmp / "scratch"),
                            speakers_batch_shards=1)


def _run(s: SpeakersSettings, workdir: Path | None = None) -> SpeakersSummary:
    return SpeakerLinker(s, open_store(s.output_url, s), h.ledger(s), workdir).run()


def _labels(s: SpeakersSettings) -> dict[str, tuple[str, float]]:
    r = SpeakersReader(open_store(s.output_url, s), s)
    r.refresh()
    return {f"{seg}@{shard}": lab for shard in (0, 1, 2) for seg, lab in
            (r.labels(shard) or {}).items()}


def _voices(layout: dict) -> dict[str, str]:
    return {f"{key}_{j:04d}@{shard}": voice for shard, files in layout.items()
            for key, segs in files.items() for j, (voice, _) in enumerate(segs)}


def _by_voice(labels, truth) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for seg, voice in truth.items():
        out.setdefault(voice, set()).add(labels[seg][0])
    return out


def _check(labels, truth) -> None:
    ids = _by_voice(labels, truth)
    assert all(len(v) == 1 for v in ids.values()), ids  # one id per voice across files
    assert len(set().union(*ids.values())) == len(ids)  # and never one id for two voices
    assert all(0.5 < conf <= 1.0 for _, conf in labels.values())


def test_voices_are_linked_across_files_and_a_second_run_keeps_labels(tmp_path: Path) -> None:
    s = _settings(str(tmp_path / "out"), tmp_path)
    for shard, files in FIRST.items():
        h.add_shard(s, shard, files)
    first = _run(s)
    assert first.shards == [0, 1] and first.segments == 7 and first.speakers == 2
    before = _labels(s)
    _check(before, _voices(FIRST))
    raw = {k: (tmp_path / "out" / labels_key(s, k)).read_bytes() for k in (0, 1)}
    for shard, files in SECOND.items():
        h.add_shard(s, shard, files)
    second = _run(s)
    assert second.shards == [0, 1, 2] and second.segments == 14 and second.speakers == 4
    after = _labels(s)
    assert {k: after[k] for k in before} == before  # labels given stay
    assert all((tmp_path / "out" / labels_key(s, k)).read_bytes() == raw[k] for k in (0, 1))
    _check(after, _voices({**FIRST, **SECOND}))
    assert len(list(open_store(s.output_url, s).list(PARTS))) == 3  # one part per batch


def test_state_in_s3_is_carried_on_by_another_machine(tmp_path: Path, s3_bucket: str) -> None:
    s = _settings(f"s3://{s3_bucket}/run", tmp_path)
    for shard, files in FIRST.items():
        h.add_shard(s, shard, files)
    _run(s, tmp_path / "machine-a")
    before = _labels(s)
    for shard, files in SECOND.items():
        h.add_shard(s, shard, files)
    # another machine, nothing local: its index is the store's parts replayed
    linker = SpeakerLinker(s, open_store(s.output_url, s), h.ledger(s), tmp_path / "machine-b")
    summary = linker.run()
    assert linker.progress.rebuilt == 2 and summary.speakers == 4
    after = _labels(s)
    assert {k: after[k] for k in before} == before
    _check(after, _voices({**FIRST, **SECOND}))
    # and the same corpus linked by one machine from the start gives the same labels
    t = _settings(str(tmp_path / "local"), tmp_path)
    for shard, files in {**FIRST, **SECOND}.items():
        h.add_shard(t, shard, files)
    _run(t, tmp_path / "machine-c")
    assert _labels(t) == after


def test_an_unrecorded_part_is_dropped_and_its_shards_linked_again(tmp_path: Path) -> None:
    s = _settings(str(tmp_path / "out"), tmp_path)
    for shard, files in FIRST.items():
        h.add_shard(s, shard, files)
    _run(s)
    store = open_store(s.output_url, s)
    ledger = h.ledger(s)
    store.delete(ledger.done_key("speakers", 1))  # a crash between its part and its record
    parts = sorted(store.list(PARTS))
    summary = _run(s)
    assert summary.shards == [0, 1] and summary.speakers == 2
    now = sorted(store.list(PARTS))
    assert now[0] == parts[0] and parts[1] not in now and len(now) == 2
    _check(_labels(s), _voices(FIRST))


def test_an_empty_root_says_what_to_run(tmp_path: Path) -> None:
    s = _settings(str(tmp_path / "out"), tmp_path)
    with pytest.raises(NothingToLink, match="enhance"):
        _run(s)
    assert not (tmp_path / "out" / SUMMARY_KEY).exists()
