"""`onsei export --with-audio`: WebDataset tars of FLAC + the export line that
`webdataset.WebDataset` and `datasets.load_dataset("webdataset")` load with the audio decoded;
without it, `audio_tar` is relative to the output root."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from common.shards.tar import ShardWriter
from common.storage import open_store
from services.ops.export.run import ExportError, export
from services.ops.export.write import SplitPlan
from services.stages import PIPELINE
from tests.services.ops.export.synth import default_run, lines_of, write_run

RATE = 24000


def _samples(seconds: float) -> int:
    return round(seconds * RATE)


def _real_audio(store, s, shards: int) -> None:
    """Replace the synthetic sidecars' placeholder FLAC with real audio of each segment's
    duration (a tone whose pitch differs per segment)."""
    for sid in range(shards):
        key = PIPELINE.output_key("enhance", s, sid)
        local = Path(s.scratch_dir) / f"in{sid}.tar"
        local.parent.mkdir(parents=True, exist_ok=True)
        store.get_file(key, local)
        with tarfile.open(local) as tf:
            metas = {m.name[:-5]: tf.extractfile(m).read()  # type: ignore[union-attr]
                     for m in tf.getmembers() if m.name.endswith(".json")}
        out = Path(s.scratch_dir) / f"out{sid}.tar"
        with ShardWriter(out) as w:
            for k, meta in metas.items():
                secs = json.loads(meta)["duration_seconds"]
                t = np.arange(_samples(secs)) / RATE
                buf = io.BytesIO()
                sf.write(buf, 0.3 * np.sin(2 * np.pi * (200 + int(k[-1]) * 50) * t), RATE,
                         format="FLAC")
                w.write(k, {"flac": buf.getvalue(), "json": meta})
        store.put_file(out, key)


def test_with_audio_loads_in_webdataset_and_datasets(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=4, shards=2)
    write_run(store, s, run, tokens=True)
    _real_audio(store, s, 2)
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(seed=1, validation_fraction=0.3),
           with_audio=True, shard_segments=5)
    lines = {x["id"]: x for rows in lines_of(to).values() for x in rows}
    assert len(lines) == 24
    tars = sorted((to / "webdataset").rglob("*.tar"))
    assert len(tars) >= 24 // 5 and {t.parent.name for t in tars} == {"train", "validation"}

    import webdataset as wds

    seen = {}
    for t in tars:
        for sample in wds.WebDataset(str(t), shardshuffle=False):
            meta = json.loads(sample["json"])
            audio, rate = sf.read(io.BytesIO(sample["flac"]))
            seen[meta["id"]] = (meta, len(audio), rate)
    assert set(seen) == set(lines)
    for i, (meta, n, rate) in seen.items():
        assert meta == lines[i]  # the same fields as the JSONL line
        assert rate == RATE and n == _samples(lines[i]["duration_seconds"])

    import datasets

    # datasets infers the JSON's schema from the first 5 samples of the last split's first tar
    # (its webdataset builder): one split, whose first lines are the export's schema witnesses
    to = tmp_path / "train-only"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0), with_audio=True,
           shard_segments=5)
    ds = datasets.load_dataset("webdataset", data_dir=str(to / "webdataset"),
                               cache_dir=str(tmp_path / "hf"))
    assert set(ds) == {"train"}
    got = 0
    for split in ds.values():
        for row in split:
            meta = row["json"]
            audio = row["flac"]
            arr = audio["array"] if isinstance(audio, dict) else audio.get_all_samples().data
            rate = (audio["sampling_rate"] if isinstance(audio, dict)
                    else audio.metadata.sample_rate)
            assert rate == RATE and np.asarray(arr).shape[-1] == _samples(
                lines[meta["id"]]["duration_seconds"])
            assert meta["text"] == lines[meta["id"]]["text"]
            got += 1
    assert got == 24


def test_with_audio_refuses_a_missing_flac(make_settings, tmp_path: Path) -> None:
    s = make_settings()
    store = open_store(s.output_url, s)
    write_run(store, s, default_run(files_per_shard=2, shards=1), tokens=True)
    store.delete(PIPELINE.output_key("enhance", s, 0))
    to = tmp_path / "set"
    with pytest.raises(ExportError, match="--with-audio: .*missing"):
        export(s, s.output_url, str(to), with_audio=True)
    assert not to.exists()


def test_audio_tar_is_relative_to_the_output_root(make_settings, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain export's lines name no path of the machine that made it: ``audio_tar`` is the
    tar's key under the output root (the card's Source), wherever the root is copied."""
    s = make_settings()
    store = open_store(s.output_url, s)
    write_run(store, s, default_run(files_per_shard=2, shards=1), tokens=False)
    monkeypatch.chdir(Path(s.output_url).parent)
    export(s, os.path.basename(s.output_url), str(tmp_path / "set"), tokens=False,
           plan=SplitPlan(validation_fraction=0.0))
    x = lines_of(tmp_path / "set")["train"][0]
    assert x["audio_tar"] == "enhanced/shard-000000.tar"
    with tarfile.open(Path(s.output_url) / x["audio_tar"]) as tf:
        assert x["audio_member"] in tf.getnames()
