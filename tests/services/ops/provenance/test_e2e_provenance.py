"""Provenance end to end: files packed with metadata (beside them and in a manifest) and
without, through asr, enhance (RNNoise), ``onsei dedup`` and ``onsei speakers``; an export
before any takedown, then a takedown by source and one by voice, ``takedown --check`` on the
first export, and an export with a licence policy and a test set embedded in a longer file.
Every count in the card's provenance section is checked against the lines written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from common.shards.audio import decode_audio, resample
from common.storage import open_store
from fixtures.speechgen import synth
from services.dedup.run import Deduper
from services.dedup.settings import DedupSettings
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.ops.pack_audio import pack
from services.ops.provenance.cli import takedown
from services.ops.provenance.screen import ScreenOptions
from services.ops.runner import Runner
from services.rules.policy import FilterPolicy
from services.speakers.run import SpeakerLinker
from services.speakers.settings import SpeakersSettings
from services.stages import open_ledger
from tests.services.ops.export.synth import lines_of
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

# the whole pipeline on seven files (~90 s on two shared cores): the slow suite
pytestmark = [needs(ESPEAK, POCKETSPHINX), pytest.mark.slow]

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CARDS = Path("/usr/share/pocketsphinx/test/data/cards")
TEST_CLIP = "sense_and_sensibility_01_austen_64kb-0870"
TEST_TEXT = ("and mister john dashwood had then leisure to consider how much there might be "
             "prudently in his power to do for them")
FLAGGED = "Creative Commons Attribution license (reuse allowed)"


def _write(folder: Path, name: str, audio: np.ndarray, rate: int = 16000,
           meta: dict | None = None) -> None:
    sf.write(folder / f"{name}.wav", audio, rate)
    if meta is not None:
        (folder / f"{name}.json").write_text(json.dumps(meta))


def _embedded_test_utterance(test_dir: Path) -> np.ndarray:
    """The test utterance as a test set holds it (clean, with its transcript), and as the
    corpus holds it: mp3 64k, 6 dB quieter, between two other sentences, at 22.05 kHz."""
    from fixtures.dedup_corpus import mp3

    clean = decode_audio((LIBRIVOX / f"{TEST_CLIP}.wav").read_bytes(), 16000)
    test_dir.mkdir()
    sf.write(test_dir / f"{TEST_CLIP}.wav", clean, 16000)
    (test_dir / f"{TEST_CLIP}.txt").write_text(TEST_TEXT)
    copy = mp3(clean) * 10 ** (-6 / 20)
    gap = np.zeros(12000, np.float32)
    long = np.concatenate([synth("the ferry left the harbour just after nine in the morning",
                                 "en-us"), gap, copy.astype(np.float32), gap,
                           synth("we counted the boats until the light was gone", "en-us")])
    return resample(long, 16000, 22050)


def _cards(*names: str) -> np.ndarray:
    """Real lines of one speaker (pocketsphinx-testdata's card names), with pauses between."""
    gap = np.zeros(6400, np.float32)
    return np.concatenate([x for n in names for x in
                           (decode_audio((CARDS / f"{n}.wav").read_bytes(), 16000), gap)])


def _card_table(card: str, heading: str) -> list[list[str]]:
    body = card.split(f"### {heading}\n", 1)[1].split("\n### ", 1)[0]
    return [[c.strip() for c in row.strip("|").split("|")] for row in body.splitlines()
            if row.startswith("| ") and not row.startswith("| ---")][1:]


def test_provenance_licences_takedowns_and_test_sets(make_settings, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    alice = synth("the orchard by the river was planted by my grandfather", "en")
    _write(folder, "a", alice, meta={"webpage_url": "https://video.example/a", "license":
                                     "cc-by-4.0", "channel": "Alice", "upload_date": "20240105"})
    _write(folder, "a_copy", alice)  # the same recording, re-uploaded (its metadata: manifest)
    _write(folder, "b", _cards("001", "002", "003"))  # a real voice, taken down by a sample
    _write(folder, "c", synth("the library opens late on wednesdays", "en+f3"),
           meta={"source": "https://video.example/c", "license": FLAGGED})
    _write(folder, "d", synth("nobody wrote down where the keys were left", "en+f2"))
    _write(folder, "h", _embedded_test_utterance(tmp_path / "testset"), rate=22050,
           meta={"source": "https://video.example/h", "licence": "CC-BY-4.0", "owner": "Hana"})
    _write(folder, "k", synth("a good map is worth more than a fast horse", "en"),
           meta={"source_id": "k-001", "license": "CC0-1.0"})
    manifest = {"a_copy.wav": {"url": "https://mirror.example/a", "license": "CC0-1.0"},
                "b.wav": {"url": "https://video.example/b", "license": "CC0-1.0",
                          "channel": "Bob"}}
    s = make_settings(asr_model="bundled:whisper-base", asr_device="cpu",
                      enhance_backend="rnnoise", enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=0.0, filter_min_ovrl=0.0,
                      filter_min_speech_fraction=0.0, filter_max_music=1.0,
                      filter_multi_speaker=False)
    summary = pack(folder, s.input_url, s, progress=False, manifest=manifest)
    assert summary.files == 7 and summary.with_metadata == 6
    assert all(not x.error for x in Runner(s, ["asr", "enhance"]).run(range(1)))
    store = open_store(s.output_url, s)
    table = {json.loads(x)["key"]: json.loads(x) for x in
             store.read_bytes("provenance/shard-000000.jsonl").splitlines()}
    assert table["a"]["licence"] == "CC-BY-4.0" and table["a"]["owner"] == "Alice"
    assert table["a_copy"]["source"] == "https://mirror.example/a"
    assert table["c"]["licence"] == FLAGGED and table["c"]["licence_ok"] is False
    assert table["d"]["source"] == "unknown" and table["d"]["licence"] == "unknown"

    ds = DedupSettings(output_url=s.output_url, scratch_dir=s.scratch_dir)
    Deduper(ds, store, open_ledger(ds, store), policy=FilterPolicy.from_settings(s)).run()
    ss = SpeakersSettings(output_url=s.output_url, scratch_dir=s.scratch_dir)
    SpeakerLinker(ss, store, open_ledger(ss, store)).run()

    before = tmp_path / "before"
    export(s, s.output_url, str(before), plan=SplitPlan(validation_fraction=0.0), tokens=False)
    first = lines_of(before)["train"]
    by_key = {}
    for line in first:
        by_key.setdefault(line["id"].rsplit("_", 1)[0], []).append(line)
    assert {"a", "a_copy"} & set(by_key) and "b" in by_key, sorted(by_key)
    assert all(x["origin"] == "unknown" and x["licence"] == "unknown" for x in by_key["d"])
    assert {x["licence"] for x in by_key["k"]} == {"CC0-1.0"}

    env = {"ONSEI_OUTPUT_URL": s.output_url, "ONSEI_SCRATCH_DIR": s.scratch_dir}
    run = CliRunner()
    got = run.invoke(takedown, ["--source", "https://video.example/a/", "--reason",
                                "owner asked, mail of 2026-12-01", "--by", "legal@example"],
                     env=env)
    assert got.exit_code == 0, got.output
    sample = tmp_path / "bob.wav"
    sf.write(sample, _cards("004", "005"), 16000)  # other lines of the same speaker
    got = run.invoke(takedown, ["--voice", str(sample), "--reason", "the speaker asked"], env=env)
    assert got.exit_code == 0, got.output
    assert "1 corpus speakers" in got.output or "corpus speakers (" in got.output, got.output
    listed = [json.loads(x) for x in run.invoke(takedown, ["--list"], env=env).output.splitlines()]
    assert [t["kind"] for t in listed] == ["source", "voice"]
    assert listed[0]["requested_by"] == "legal@example" and listed[0]["matched"]["keys"] == 1
    # the sample's embedding is kept: each export matches it against the speakers as they are
    assert len(listed[1]["embedding"]) == 256 and listed[1]["threshold"] == 0.8
    got = run.invoke(takedown, ["--check", str(before)], env=env)
    covered = {row.split("\t")[1].rsplit("_", 1)[0] for row in got.output.splitlines()
               if "\t" in row}
    dup_keys = {"a", "a_copy"} & set(by_key)
    assert covered == dup_keys | {"b"}, got.output

    after = tmp_path / "after"
    res = export(s, s.output_url, str(after), plan=SplitPlan(validation_fraction=0.0),
                 tokens=False, screening=ScreenOptions.parse("CC0-1.0,CC-BY-4.0",
                                                             (str(tmp_path / "testset"),)))
    lines = lines_of(after)["train"]
    keys = {x["id"].rsplit("_", 1)[0] for x in lines}
    assert not keys & {"a", "a_copy", "b", "c", "d"}, keys
    assert "k" in keys
    assert all(x["licence"] in ("CC0-1.0", "CC-BY-4.0") for x in lines)
    removed = {k: v for r in res.reads for k, v in r.removed.items()}
    h_lines = [x for x in by_key["h"]]
    assert removed["test_set:testset"] >= 1
    assert len([x for x in lines if x["id"].startswith("h_")]) == (
        len(h_lines) - removed["test_set:testset"])
    card = (after / "README.md").read_text()
    lic = {r[0].strip("`"): r for r in _card_table(card, "Hours by licence")}
    for name, row in lic.items():
        mine = [x for x in lines if x["licence"] == name]
        assert int(row[1]) == len(mine)
        assert row[2] == f"{sum(x['duration_seconds'] for x in mine) / 3600:.3f}"
    assert sum(int(r[1]) for r in lic.values()) == len(lines)
    src = {r[0].strip("`"): int(r[2]) for r in _card_table(card, "Hours by source")}
    assert src == {k: sum(1 for x in lines if x["origin"] == k) for k in src}
    assert sum(src.values()) == len(lines)
    policy = {r[0].split("`")[1]: int(r[1]) for r in _card_table(card, "Licence policy")}
    assert policy == {FLAGGED: len(by_key.get("c", [])), "unknown": len(by_key["d"])}
    assert "not an SPDX id" in card
    attribution = card.split("### Attribution\n", 1)[1].split("\n### ", 1)[0]
    if any(x["id"].startswith("h_") for x in lines):
        assert "`https://video.example/h`: Hana, `CC-BY-4.0`" in attribution
    assert "Takedowns applied: 2" in card
    td = {r[1]: int(r[4]) for r in _card_table(card, "Takedowns")}
    # a_copy is also listed as a duplicate: a segment removed for two reasons counts under each
    assert td == {"source": 2 * len(by_key["a"]), "voice": len(by_key["b"])}
    ts = _card_table(card, "Test sets")
    assert [r[0] for r in ts] == ["`testset`"] and int(ts[0][2]) == removed["test_set:testset"]
    assert int(ts[0][4]) + int(ts[0][5]) == int(ts[0][2])
    assert re.search(r"Takedowns applied: 2", card)
