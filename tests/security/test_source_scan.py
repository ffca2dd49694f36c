"""Static guarantees over the whole source tree (ast, not grep: comments and strings never fool it).

- no shell is ever built: no ``shell=True``, ``os.system``, ``os.popen``, ``os.exec*p*`` with a
  shell, ``commands``/``pty.spawn``;
- no tar member is ever extracted to disk by its (attacker-chosen) name: no ``extract`` /
  ``extractall`` / ``_extract_member`` calls anywhere; members are read with ``extractfile``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("common", "services", "bench", "deploy")
# Calls that hand a string to /bin/sh. (os.exec*/spawn* and pty.spawn take argv lists: no shell.)
SHELL_FUNCS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"),
               ("subprocess", "getstatusoutput")}
EXTRACT_ATTRS = {"extract", "extractall", "_extract_member", "unpack_archive"}


def _sources() -> list[Path]:
    files: list[Path] = []
    for d in SOURCE_DIRS:
        files.extend(p for p in (REPO / d).rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(files)


def _parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _dotted(node: ast.AST) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def shell_violations(tree: ast.AST) -> list[str]:
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name[-2:] in SHELL_FUNCS or name in {("system",), ("popen",)}:
            bad.append(f"{'.'.join(name)}() at line {node.lineno}")
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant)
                                          and kw.value.value is False):
                bad.append(f"shell={ast.unparse(kw.value)} at line {node.lineno}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if ("os", alias.name) in SHELL_FUNCS:
                    bad.append(f"from os import {alias.name} at line {node.lineno}")
    return bad


def extract_violations(tree: ast.AST) -> list[str]:
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in EXTRACT_ATTRS:
            bad.append(f".{node.func.attr}() at line {node.lineno}")
    return bad


def test_scanner_finds_what_it_should():
    """The scanners themselves catch each form they claim to (else a pass means nothing)."""
    code = ("import os, subprocess, tarfile\nfrom os import system\n"
            "subprocess.run(cmd, shell=True)\nsubprocess.Popen(c, shell=flag)\nos.system(c)\n"
            "os.popen(c)\nsubprocess.getoutput(c)\n"
            "t.extractall('/x')\nt.extract(m)\nshutil.unpack_archive(p)\n")
    tree = ast.parse(code)
    assert len(shell_violations(tree)) == 6
    assert len(extract_violations(tree)) == 3
    ok = ast.parse("subprocess.run(['ls'], shell=False)\nf = t.extractfile(m)\n"
                   "os.execvpe(cmd[0], cmd, env)\n")
    assert shell_violations(ok) == [] and extract_violations(ok) == []


def test_tree_is_scanned():
    files = _sources()
    assert any(p.name == "shards.py" for p in files) and len(files) >= 15


@pytest.mark.parametrize("check", [shell_violations, extract_violations],
                         ids=["no-shell", "no-extract-by-name"])
def test_source_tree_clean(check):
    found = {str(p.relative_to(REPO)): v for p in _sources() if (v := check(_parse(p)))}
    assert found == {}
