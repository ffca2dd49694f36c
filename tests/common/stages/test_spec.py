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
