"""A worker of one stage imports nothing of another stage's model stack."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STAGES = ("asr", "enhance", "tokenize")


def _loaded(module: str, then: str = "") -> list[str]:
    """The modules a fresh interpreter holds after importing ``module`` (and running ``then``)."""
    code = f"import sys, {module}; {then or 'pass'}; print(sorted(sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    loaded: list[str] = ast.literal_eval(res.stdout.strip().splitlines()[-1])
    return loaded


# what a worker imports: its app module's ``include=`` (``services.<stage>.tasks``), which
# imports the app (``services.<stage>.celery``); the stage package's __init__ imports nothing
@pytest.mark.parametrize("module, banned", [
    ("services.asr.tasks", ("torch", "transformers", "neucodec")),
    ("services.tokenize.tasks", ("ctranslate2", "faster_whisper")),
    ("services.enhance.tasks", ("ctranslate2", "faster_whisper", "neucodec")),
    ("common.queue.worker", ("torch", "ctranslate2", "faster_whisper")),
])
def test_import_does_not_pull_other_stacks(module: str, banned: tuple[str, ...]) -> None:
    loaded = _loaded(module)
    assert module in loaded and (not module.endswith(".tasks")
                                 or module.removesuffix("tasks") + "celery" in loaded)
    assert [m for m in banned if m in loaded] == [], module


@pytest.mark.parametrize("stage", ["asr", "enhance"])
def test_a_worker_loads_no_later_stage(stage: str) -> None:
    """A worker of a stage loads its own spec and settings and those of the stages before it
    (their output keys are its inputs), never a later stage's: the pipeline's order comes from
    services/pipeline.py, which imports a spec only when asked for it."""
    later = STAGES[STAGES.index(stage) + 1:]
    # what its task does after a shard: check ``until``, pick the next stage's queue
    hand_on = ("from services.pipeline import PIPELINE as p; "
               f"assert p.next({stage!r}, p.last) == {later[0]!r}; p.chain({stage!r}); "
               f"p.settings_upto({stage!r})(until=p.last)")
    loaded = _loaded(f"services.{stage}.tasks", hand_on)
    assert f"services.{stage}.settings" in loaded and f"services.{stage}.spec" in loaded
    assert [m for m in loaded if m.startswith(tuple(f"services.{s}." for s in later))] == []
    assert "services.stages" not in loaded


@pytest.mark.parametrize("stage", ["asr", "enhance", "tokenize"])
def test_stage_module_imports_without_celery(stage: str) -> None:
    """The processing of a stage is usable without a broker: no Celery, no worker hooks."""
    code = (f"import sys, services.{stage}.stage, services.{stage}.spec; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('celery', 'kombu')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"



@pytest.mark.parametrize("stage", STAGES)
def test_stage_imports_no_other_stage(stage: str) -> None:
    """Stages hand work on by task name, never by import (docs/architecture.md)."""
    others = {f"services.{s}" for s in STAGES if s != stage}
    bad = []
    for f in sorted((REPO / "services" / stage).rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{f.relative_to(REPO)}: {n}" for n in names
                    if any(n == o or n.startswith(o + ".") for o in others)]
    assert bad == []
