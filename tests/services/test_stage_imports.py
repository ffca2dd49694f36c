"""A worker of one stage imports nothing of another stage's model stack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module, banned", [
    ("services.asr", ("torch", "transformers", "neucodec")),
    ("services.tokenize", ("ctranslate2", "faster_whisper")),
    ("services.enhance", ("ctranslate2", "faster_whisper", "neucodec")),
    ("common.queue.worker", ("torch", "ctranslate2", "faster_whisper")),
])
def test_import_does_not_pull_other_stacks(module: str, banned: tuple[str, ...]) -> None:
    code = (f"import sys, {module}; "
            f"print([m for m in {banned!r} if m in sys.modules])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", f"{module} imported {res.stdout.strip()}"


@pytest.mark.parametrize("stage", ["asr", "enhance", "tokenize"])
def test_stage_module_imports_without_celery(stage: str) -> None:
    """The processing of a stage is usable without a broker: no Celery, no worker hooks."""
    code = (f"import sys, services.{stage}.stage, services.{stage}.spec; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('celery', 'kombu')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


STAGES = ("asr", "enhance", "tokenize")


@pytest.mark.parametrize("stage", STAGES)
def test_stage_imports_no_other_stage(stage: str) -> None:
    """Stages hand work on by task name, never by import (docs/architecture.md)."""
    import ast

    others = {f"services.{s}" for s in STAGES if s != stage}
    bad = []
    for f in sorted((REPO / "services" / stage).rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{f.relative_to(REPO)}: {n}" for n in names
                    if any(n == o or n.startswith(o + ".") for o in others)]
    assert bad == []
