"""The enhance stage writes one signature file per shard beside its tar, published before the
done record, with a row per written segment (services/dedup/signature.py)."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

from common.stages.engine import Engine
from services.dedup.fingerprint import FRAMES_PER_SECOND
from services.dedup.signature import fingerprints, read_signatures
from services.dedup.text import BANDS
from services.enhance.stage import EnhanceStage
from services.records import Quality
from services.stages import PIPELINE
from tests.services.enhance.helpers import build_inputs
from tests.system_packages import ESPEAK, needs

pytestmark = needs(ESPEAK)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    b = tmp_path_factory.mktemp("sig")
    build_inputs(b / "raw", b / "out")
    return b


def _run(make_settings, base: Path, tmp_path: Path, **over) -> tuple[Path, dict]:
    out = tmp_path / "out"
    shutil.copytree(base / "out", out)
    s = make_settings(input_url=str(base / "raw"), output_url=str(out), enhance_device="cpu",
                      enhance_batch_size=4, **over)
    return out, Engine(s, PIPELINE, EnhanceStage(s)).run(0).record


@pytest.mark.parametrize(("enhancer", "annotate"), [("none", False), ("rnnoise", True)])
def test_stage_writes_a_signature_per_segment(base, make_settings, tmp_path, enhancer: str,
                                              annotate: bool) -> None:
    out, rec = _run(make_settings, base, tmp_path, enhance_backend=enhancer,
                    quality_annotations=annotate, quality_fidelity_fraction=0.0)
    key = "enhanced/shard-000000.signatures.parquet"
    assert key in rec.outputs and rec.counts["signatures"] == 3
    table = read_signatures(out / key)
    with tarfile.open(out / "enhanced/shard-000000.tar") as tf:
        ids = sorted({Path(m.name).stem for m in tf})
    assert table.column("id").to_pylist() == ids == ["a_0000", "a_0002", "e_0000"]
    assert table.column("text").to_pylist() == ["hello 0", "hello 2", "hello 0"]
    assert table.column("language").to_pylist() == ["en", "en", "ja"]
    secs = table.column("seconds").to_pylist()
    assert secs == pytest.approx([3.75, 8.5, 23.0], abs=0.02)
    for fp, s in zip(fingerprints(table), secs):  # one frame every 16 ms of the segment
        assert abs(fp.size - s * FRAMES_PER_SECOND) <= 10
    assert all(len(b) == BANDS for b in table.column("bands").to_pylist())
    ovrl = table.column("ovrl").to_pylist()
    quality = table.column("quality").to_pylist()  # the filterable block, for the copy kept
    if annotate:
        assert all(isinstance(v, float) and 1.0 <= v <= 5.0 for v in ovrl)
        blocks = [Quality.from_json(q) for q in quality]
        assert [b.dnsmos_after.ovrl for b in blocks] == pytest.approx(ovrl, abs=1e-3)
        assert all(b.speaker_embedding is None for b in blocks)  # sidecar-only: not carried
    else:
        assert ovrl == [None, None, None] and quality == [None, None, None]


def test_rerun_rewrites_the_signature_file(base, make_settings, tmp_path) -> None:
    out, _ = _run(make_settings, base, tmp_path, enhance_backend="none", quality_annotations=False)
    sig = out / "enhanced/shard-000000.signatures.parquet"
    sig.write_bytes(b"not parquet")
    s = make_settings(input_url=str(base / "raw"), output_url=str(out), enhance_backend="none",
                      quality_annotations=False, enhance_device="cpu")
    Engine(s, PIPELINE, EnhanceStage(s)).run(0, check_done=False)
    assert read_signatures(sig).num_rows == 3


def test_device_spectrograms_give_the_same_signatures(base, make_settings, tmp_path) -> None:
    from services.dedup.spectrum import numpy_powers
    from services.enhance.signature_powers import DevicePowers

    s = make_settings(input_url=str(base / "raw"), enhance_backend="none",
                      quality_annotations=False, enhance_device="cpu")
    stage = EnhanceStage(s)
    stage.load()
    assert stage._signature_powers is numpy_powers  # no GPU: numpy
    tables = []
    for name, powers in (("numpy", numpy_powers), ("torch", DevicePowers("cpu"))):
        out = tmp_path / name
        shutil.copytree(base / "out", out)
        s = make_settings(input_url=str(base / "raw"), output_url=str(out), enhance_backend="none",
                          quality_annotations=False, enhance_device="cpu")
        stage = EnhanceStage(s)
        stage._signature_powers = powers
        Engine(s, PIPELINE, stage).run(0)
        tables.append(read_signatures(out / "enhanced/shard-000000.signatures.parquet"))
    a, b = tables
    assert a.column("akeys").to_pylist() == b.column("akeys").to_pylist()
    flipped = sum(int(np.bitwise_count(x ^ y).sum())
                  for x, y in zip(fingerprints(a), fingerprints(b)))
    assert flipped <= sum(x.size for x in fingerprints(a)) * 32 * 1e-4
