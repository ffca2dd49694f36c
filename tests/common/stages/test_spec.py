"""The pipeline's order (common/stages/spec.py): a stage's spec, and with it its settings
section, is loaded only when a process asks for it; a worker's settings hold its own section
and those of the stages before it."""

from __future__ import annotations

import pytest

from common.settings import Settings
from common.stages.contract import InputRef
from common.stages.spec import Pipeline, StageSpec


class _ASettings(Settings):
    a_knob: int = 1


class _BSettings(Settings):
    b_knob: int = 2


def _specs() -> dict[str, StageSpec]:
    return {
        "a": StageSpec(name="a", stage_class="x:A", settings=_ASettings,
                       output_key=lambda s, i: f"a/{i}.txt",
                       inputs=lambda s, i: {"raw": InputRef("input", f"{i}.tar")}),
        "b": StageSpec(name="b", stage_class="x:B", settings=_BSettings,
                       output_key=lambda s, i: f"b/{i}.txt",
                       inputs=lambda s, i: {"a": InputRef.of_stage("a")}),
    }


def test_a_spec_is_loaded_when_first_asked_for() -> None:
    loaded: list[str] = []

    def load(name: str) -> StageSpec:
        loaded.append(name)
        return _specs()[name]

    p = Pipeline(names=("a", "b"), load=load)
    assert (p.names, p.next("a"), p.last, "b" in p) == (("a", "b"), "b", "b", True)
    assert loaded == []  # the order alone: no spec
    a_settings = p.settings_upto("a")
    assert loaded == ["a"] and issubclass(a_settings, _ASettings)
    assert not issubclass(a_settings, _BSettings)
    both = p.settings_upto("b")()
    assert loaded == ["a", "b"] and isinstance(both, _ASettings)
    assert p.inputs("b", both, 7) == {"a": InputRef("output", "a/7.txt")}
    assert p.settings_class is p.settings_upto("b")  # built once
    assert loaded == ["a", "b"]  # each loaded once


def test_the_settings_know_every_stage_name() -> None:
    """``until`` names any stage of the order, even one whose spec this process never loads."""
    p = Pipeline(names=("a", "b"), load=lambda n: _specs()[n])
    assert p.settings_upto("a")(until="b").until == "b"
    with pytest.raises(ValueError, match="unknown stage 'c'"):
        p.settings_upto("a")(until="c")


def test_a_loader_that_returns_another_stage_is_refused() -> None:
    p = Pipeline(names=("a", "b"), load=lambda n: _specs()["a"])
    with pytest.raises(ValueError, match="is 'a'"):
        p.spec("b")
    with pytest.raises(ValueError, match="unknown stage 'c'"):
        p.spec("c")


def test_given_specs_need_no_loader() -> None:
    specs = _specs()
    p = Pipeline((specs["a"], specs["b"]))
    assert p.specs == (specs["a"], specs["b"]) and p.previous("b") == "a"
    with pytest.raises(ValueError):
        Pipeline()


def test_side_outputs_and_corpus_steps_are_declared() -> None:
    """A corpus step reads a side output its stage declares; its steps load when first asked
    for, and one applied by a stage that is not after the one it reads is refused."""
    from dataclasses import replace

    from common.stages.spec import CorpusStep

    specs = _specs()
    a = replace(specs["a"], side_outputs=lambda s, i: {"sig": f"a/{i}.sig"})
    step = CorpusStep(name="c", after="a", reads="sig", result="c/summary.json",
                      applied_by="b", covered="x:covered")
    asked: list[str] = []
    p = Pipeline((a, specs["b"]), corpus=[lambda: asked.append("c") or step])
    assert asked == []
    assert p.corpus_steps == (step,) and p.corpus_step("c") is step and asked == ["c"]
    assert p.side_output_key("a", "sig", Settings(), 3) == "a/3.sig"
    with pytest.raises(ValueError, match="declares no side output 'x'"):
        p.side_output_key("a", "x", Settings(), 3)
    with pytest.raises(ValueError, match="declares no side output"):
        p.side_output_key("b", "sig", Settings(), 3)
    backwards = Pipeline((a, specs["b"]), corpus=[lambda: replace(step, after="b",
                                                                  applied_by="a")])
    with pytest.raises(ValueError, match="not after 'b'"):
        _ = backwards.corpus_steps
    with pytest.raises(ValueError, match="unknown corpus step 'd'"):
        p.corpus_step("d")


def test_the_pipeline_declares_dedup() -> None:
    """Dedup reads what enhance's spec says it publishes beside each shard; tokenize applies
    it (services/pipeline.py, services/dedup/step.py)."""
    from services.dedup.signature import signature_key
    from services.pipeline import PIPELINE

    step = PIPELINE.corpus_step("dedup")
    assert (step.after, step.reads, step.applied_by) == ("enhance", "signatures", "tokenize")
    s = Settings()
    assert signature_key(s, 12) == "enhanced/shard-000012.signatures.parquet" == \
        PIPELINE.side_output_key("enhance", "signatures", s, 12)
