"""common/ names no stage: each stage owns its spec (services/<stage>/spec.py) and the order
lives in services/stages.py (docs/architecture.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from services.stages import STAGES

COMMON = Path(__file__).resolve().parents[2] / "common"


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_no_stage_name_in_a_string_literal_of_common() -> None:
    word = re.compile(rf"\b({'|'.join(STAGES)})\b")
    found = []
    for path in sorted(COMMON.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs and word.search(node.value)):
                found.append(f"{path.relative_to(COMMON.parent)}:{node.lineno}: {node.value!r}")
    assert found == []
