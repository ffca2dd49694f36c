"""onsei run: one process, same stages, skip done work, clear model-unavailable failure."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from common.ledger.store import Ledger
from common.storage import open_store
from fixtures.speechgen import make_shard
from services.ops.run import summary_line
from services.ops.runner import Runner
from services.stages import PIPELINE
from tests.dummy.stages import DummyAsr, DummyEnhance, DummyTokenize

CLASSES = {"asr": DummyAsr, "enhance": DummyEnhance, "tokenize": DummyTokenize}


def _shards(s, n: int) -> None:
    for i in range(n):
        make_shard(Path(s.input_url) / s.shard_name(i),
                   {f"k{j}": {"wav": b"x" * 10} for j in range(3)})


def test_runs_all_stages_then_skips(make_settings) -> None:
    s = make_settings()
    _shards(s, 3)
    seen = []
    out = Runner(s, ["asr", "enhance", "tokenize"], stage_classes=CLASSES).run(
        range(3), lambda st, adv, tot: seen.append((st, adv, tot)))
    assert [len(x.processed) for x in out] == [3, 3, 3]
    lines = (Path(s.output_url) / "tokens/neucodec/shard-000001.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == [f"k{j}_{i:04d}" for j in range(3)
                                                          for i in range(2)]
    assert ("asr", 0, 3) in seen and seen.count(("tokenize", 1, 3)) == 3
    again = Runner(s, ["asr", "enhance", "tokenize"], stage_classes=CLASSES).run(range(3))
    assert [len(x.skipped_done) for x in again] == [3, 3, 3]


class _NoModel(DummyEnhance):
    def load(self) -> None:
        raise RuntimeError("Sidon weights not found offline: set ONSEI_ENHANCE_SIDON_MODEL")


def test_model_unavailable_fails_clearly_after_saving_earlier_stages(make_settings) -> None:
    s = make_settings()
    _shards(s, 2)
    out = Runner(s, ["asr", "enhance", "tokenize"],
                 stage_classes={**CLASSES, "enhance": _NoModel}).run(range(2))
    assert len(out) == 2 and len(out[0].processed) == 2
    assert "Sidon weights not found offline" in out[1].error
    assert out[1].not_run == [0, 1] and out[1].waiting == []  # ready, not waiting
    line = summary_line(out[1])
    assert line.startswith("enhance: not run: RuntimeError: Sidon weights not found offline")
    assert "waiting" not in line and "2 shards ready" in line
    led = Ledger(open_store(s.output_url, s), s, PIPELINE)
    assert led.done_ids("asr") == {0, 1} and led.done_ids("enhance") == set()


def test_failing_shard_is_recorded_and_others_go_on(make_settings, monkeypatch) -> None:
    s = make_settings()
    _shards(s, 3)
    monkeypatch.setenv("ONSEI_DUMMY_FAIL", "1")
    out = Runner(s, ["asr"], stage_classes=CLASSES).run(range(3))
    assert out[0].processed == [0, 2] and "dummy failure" in out[0].failed[1]
    assert Ledger(open_store(s.output_url, s), s, PIPELINE).failed_ids("asr") == {1}
    later = Runner(s, ["enhance"], stage_classes=CLASSES).run(range(3))
    assert later[0].waiting == [1] and later[0].processed == [0, 2]


def test_stage_found_by_name_without_importing_others() -> None:
    import subprocess
    import sys

    code = ("import sys; from services.stages import PIPELINE; "
            "c = PIPELINE.spec('enhance').load_class(); assert c.name == 'enhance'; "
            "print(sorted(m for m in sys.modules if m.startswith('services.')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[3], timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    loaded = ast.literal_eval(res.stdout)
    assert "services.enhance.stage" in loaded
    # the other stages' specs (what they read and write, their settings sections) only, none
    # of their code
    others = [m for m in loaded if m.startswith(("services.asr.", "services.tokenize."))]
    assert sorted(others) == ["services.asr.settings", "services.asr.spec",
                              "services.tokenize.settings", "services.tokenize.spec"]
