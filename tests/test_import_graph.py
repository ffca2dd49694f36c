"""The package's imports form layers, not circles (docs/architecture.md, "Layers"): no module
reaches itself again through the modules it imports (lazy and type-only imports included),
and nothing below the operator commands imports them."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its text."""
    files = {}
    for path in sorted([*REPO.glob("common/**/*.py"), *REPO.glob("services/**/*.py")]):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        files[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the path that closes it."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: finished

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "common.stages.engine" in graph["common.queue.worker"]
    assert "services.ops.report.charts" in graph["services.ops.report.render"]


def test_no_import_circle() -> None:
    assert circles(import_graph()) == []


def test_a_circle_is_found() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_only_operations_import_operations() -> None:
    graph = import_graph()
    wrong = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                   if t.startswith("services.ops") and not m.startswith("services.ops"))
    assert wrong == []


def test_scheduling_imports_no_operator_command() -> None:
    """``enqueue-shards`` and ``onsei run`` read the ledger's index (common/ledger/index.py),
    never a module of ``onsei status``: what is scheduled does not hang on a report's cache."""
    graph = import_graph()
    wrong = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                   if t.startswith("services.ops.status")
                   and not m.startswith("services.ops.status"))
    assert wrong == []


def test_no_stage_imports_the_pipeline() -> None:
    """The pipeline's declaration sits above the stages: no module of a stage package imports
    services/stages.py, and only its fleet entry points (``celery.py``, ``tasks.py``: where
    ``celery -A services.<stage>`` looks) import services/pipeline.py, for their app and task."""
    graph = import_graph()
    stages = {m.removesuffix(".spec") for m in graph if m.endswith(".spec")} - {"common.stages"}
    assert {"services.asr", "services.enhance", "services.tokenize"} <= stages
    wrong = sorted(
        f"{m} -> {t}" for m, ts in graph.items() for t in ts
        if any(m == s or m.startswith(s + ".") for s in stages)
        and (t == "services.stages"
             or (t == "services.pipeline" and m.rsplit(".", 1)[-1] not in ("celery", "tasks"))))
    assert wrong == []


def _top_imports(root: str) -> set[tuple[str, str]]:
    """(file, top-level package) of every absolute import under ``root``, lazy ones included."""
    found = set()
    for path in sorted((REPO / root).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            found |= {(path.relative_to(REPO).as_posix(), n.split(".")[0]) for n in names}
    return found


def test_tests_and_benches_share_fixtures_not_each_other() -> None:
    """Test material lives in ``fixtures/``: the benches never import a test module, the tests
    import no bench module outside the tests of the benches themselves (tests/bench/), and the
    material imports neither."""
    bench, tests, fixtures = (_top_imports(r) for r in ("bench", "tests", "fixtures"))
    assert ("tests/services/enhance/quality/test_prosody.py", "fixtures") in tests
    wrong = sorted(f"{f} -> {t}" for f, t in bench if t == "tests")
    wrong += sorted(f"{f} -> {t}" for f, t in tests
                    if t == "bench" and not f.startswith("tests/bench/"))
    wrong += sorted(f"{f} -> {t}" for f, t in fixtures if t in ("bench", "tests"))
    assert wrong == []


def test_no_corpus_step_imports_a_stage() -> None:
    """The corpus steps (dedup, speakers) and ``onsei export`` read what the stages wrote
    through the records and the rules (services/records.py, services/rules/), never a stage's
    package: the arrows of the house drawing run one way (docs/architecture.md, "Layers")."""
    graph = import_graph()
    stages = {m.removesuffix(".spec") for m in graph if m.endswith(".spec")} - {"common.stages"}
    assert {"services.asr", "services.enhance", "services.tokenize"} <= stages
    steps = ("services.dedup", "services.speakers", "services.ops.export", "services.rules",
             "services.provenance")
    assert "services.rules.policy" in graph["services.ops.export.run"]
    wrong = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                   if any(m == s or m.startswith(s + ".") for s in steps)
                   and any(t == s or t.startswith(s + ".") for s in stages))
    assert wrong == []
