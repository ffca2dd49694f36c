"""One corpus from two ``onsei pack-audio`` runs (``--start-id 0``, ``--start-id 1``), each
folder holding a ``clip.wav`` (different speech) and the same ``same.wav``: through asr, enhance,
``onsei dedup``, tokenize (a small random NeuCodec) and ``onsei export``, every segment and
speaker label is named with its shard, ``same.wav`` is one recording exported exactly once, and
both clips are exported under their own ids and voices.

Real stages in one process (the ``onsei run`` runner): the offline Whisper base, RNNoise with
the quality annotations, the dedup matcher on the enhance stage's signature files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.storage import open_store
from fixtures.speechgen import synth, wav_bytes
from services.dedup.result import DedupResult
from services.dedup.run import Deduper
from services.dedup.settings import DedupSettings
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.ops.pack_audio import pack
from services.ops.runner import Runner
from services.records import AsrLine, TokenLine, shard_of
from services.stages import PIPELINE, open_ledger
from services.tokenize.filter import FilterPolicy
from tests.conftest import built_once
from tests.services.ops.export.synth import lines_of
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)

CLIPS = ["the quick brown fox jumps over the lazy dog, and then the fox runs back home again",
         "this is a test of the emergency broadcast system, please stay calm and listen"]
SAME = "a stitch in time saves nine, and nine more after that"


@pytest.fixture(scope="module")
def codec(tmp_path_factory: pytest.TempPathFactory) -> str:
    from fixtures.factories.neucodec import build_small_neucodec

    return str(built_once(tmp_path_factory, "neucodec", build_small_neucodec))


def test_two_pack_audio_runs_make_one_corpus(make_settings, tmp_path: Path, codec: str) -> None:
    same = wav_bytes(synth(SAME, voice="en", speed=150))
    for i, (text, voice) in enumerate(zip(CLIPS, ("en", "en+m3"), strict=True)):
        folder = tmp_path / f"folder{i}"
        folder.mkdir()
        (folder / "clip.wav").write_bytes(wav_bytes(synth(text, voice=voice, speed=160)))
        (folder / "same.wav").write_bytes(same)
    s = make_settings(asr_model="bundled:whisper-base", asr_device="cpu", enhance_backend="rnnoise",
                      enhance_device="cpu", quality_annotations=True,
                      quality_fidelity_fraction=0.0, tokenize_neucodec_model=codec,
                      tokenize_device="cpu", filter_min_ovrl=0.0, filter_min_speech_fraction=0.0,
                      filter_max_music=1.0)
    for i in (0, 1):
        pack(tmp_path / f"folder{i}", s.input_url, s, start_id=i, progress=False)
    assert all(not x.error for x in Runner(s, ["asr", "enhance"]).run(range(2)))
    store = open_store(s.output_url, s)
    kept: dict[int, list[str]] = {}
    for i in (0, 1):
        rows = [AsrLine.from_json(x) for x in
                store.read_bytes(PIPELINE.output_key("asr", s, i)).splitlines()]
        assert sorted(r.key for r in rows) == ["clip", "same"]  # the same keys in both shards
        kept[i] = sorted(f"{r.key}_{seg.idx:04d}" for r in rows for seg in r.kept)
    assert kept[0] == kept[1] == ["clip_0000", "same_0000"], kept

    ds = DedupSettings(output_url=s.output_url, scratch_dir=s.scratch_dir)
    Deduper(ds, store, open_ledger(ds, store), policy=FilterPolicy.from_settings(s)).run()
    result = DedupResult.load(store)
    assert result is not None
    pairs = {d.id: d.duplicate_of for d in result.duplicates.values()}
    # one recording, two segments: one listed as a copy of the other, never of itself
    assert len(pairs) == 1 and set(pairs.items()) <= {
        ("same_0000@000000", "same_0000@000001"), ("same_0000@000001", "same_0000@000000")}, pairs
    (dup, keep), = pairs.items()
    assert all(result.qualities(d.id)[1] is not None and d.rank == 1
               for d in result.duplicates.values())
    dup_shard = shard_of(dup)

    assert all(not x.error for x in Runner(s, ["tokenize"]).run(range(2)))
    tokens = {i: [TokenLine.from_json(x) for x in
                  store.read_bytes(PIPELINE.output_key("tokenize", s, i)).splitlines()]
              for i in (0, 1)}
    for i in (0, 1):  # tokens lines name segments within their shard (their file's)
        want = ["clip_0000"] if i == dup_shard else ["clip_0000", "same_0000"]
        assert sorted(t.id for t in tokens[i]) == want
    skipped = open_ledger(s, store).read_done("tokenize", dup_shard).stat("skipped")
    assert [e["reasons"] for e in skipped] == [[f"duplicate_of:{keep}"]]

    to = tmp_path / "set"
    res = export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    rows = lines_of(to)["train"]
    ids = [x["id"] for x in rows]
    assert len(ids) == len(set(ids))  # no id twice
    # both clips under their own ids; same.wav once (not twice, not zero times)
    assert sorted(ids) == ["clip_0000@000000", "clip_0000@000001", keep]
    clip_text = {x["id"].rsplit("@", 1)[1]: x["text"] for x in rows if x["id"].startswith("clip")}
    assert "fox" in clip_text["000000"] and "test" in clip_text["000001"], clip_text
    speakers = {x["id"]: x.get("speaker_id") for x in rows if x["id"].startswith("clip")}
    labelled = [v for v in speakers.values() if v]
    assert len(set(labelled)) == len(labelled), speakers  # two voices, two labels
    assert all(v.endswith(("@000000", "@000001")) for v in labelled)
    assert sum(r.lines for r in res.reads) == len(ids)
    assert json.loads(json.dumps(res.written.lines))["train"] == len(ids)
