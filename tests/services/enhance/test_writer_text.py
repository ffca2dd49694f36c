"""The sidecar carries the segment's text forms (services/text): those asr wrote, or for a
piece cut at a speaker change, its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from common.shards.members import iter_keys
from services.enhance.chain import Chain, Item
from services.enhance.segments import CutSegment, SegmentSpec
from services.enhance.sidecar import SidecarStep
from services.enhance.tally import QualityTally
from services.enhance.writer import EnhancedWriter
from services.records import Sidecar
from services.text.forms import TextForms

FORMS = TextForms("三個です", "pyopenjtalk-plus 0.4.1", "サンコデス", "サ'ンコデス")


def test_sidecar_has_the_forms(tmp_path: Path) -> None:
    path = tmp_path / "e.tar"
    w = Chain([SidecarStep(QualityTally())], EnhancedWriter(path))
    spec = SegmentSpec("k", 0, 0.0, 1.0, "3個です", "ja", forms=FORMS)
    w.put(Item(CutSegment(0, spec, 48000, np.zeros(0, np.float32)),
               np.zeros(24000, np.float32)))
    w.put(Item(CutSegment(1, SegmentSpec("k", 1, 1.0, 2.0, "old", "ja"), 48000,
                          np.zeros(0, np.float32)), np.zeros(24000, np.float32)))
    w.close()
    metas = {item.key: Sidecar.from_json(item.files["json"]) for item in iter_keys(path)}
    assert TextForms.of(metas["k_0000"]) == FORMS
    assert metas["k_0000"].text == "3個です"
    assert TextForms.of(metas["k_0001"]) == TextForms()
    assert "text_spoken" not in metas["k_0001"].to_json()
