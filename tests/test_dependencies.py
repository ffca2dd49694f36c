"""Every third-party module the package imports is declared in pyproject.toml: in the base
dependencies, or in the extra of the stage that imports it (a worker image installs only its
own stage's extra, so an import another extra happens to pull in would fail there)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = {"common", "services", "bench", "fixtures", "tests"}
STAGE_EXTRAS = {"asr": ("asr", "asr-offline", "asr-separation"),
                "enhance": ("enhance", "enhance-overlap"), "tokenize": ("tokenize",),
                "report": ("report",), "dedup": ("dedup",), "speakers": ("speakers",),
                "provenance": ("provenance",)}
# Shared code that imports a stage's stack inside a function only those stages call: the import
# must be declared by each of them.
CALLED_BY_STAGES = {("common/models/device.py", "torch"): ("enhance", "tokenize"),
                    ("common/models/device.py", "ctranslate2"): ("asr", "enhance"),
                    # model weights from the hub: Sidon (enhance), the music separator (asr)
                    ("common/models/weights.py", "huggingface_hub"): ("asr", "enhance"),
                    # checkpoints read weights-only: Demucs's (asr's separator), pyannote's
                    ("common/models/safe_load.py", "torch"): ("asr-separation", "enhance"),
                    # the enhance stage writes the signatures `onsei dedup` reads
                    ("services/dedup/signature.py", "pyarrow"): ("enhance", "dedup"),
                    # and the speaker embeddings `onsei speakers` reads
                    ("services/speakers/embeddings.py", "pyarrow"): ("enhance", "speakers")}
# Shared packages of services that only some stages use (not stages themselves): every one of
# those stages' extras must declare what the package imports.
SHARED_BY_STAGES = {"whisper": ("asr", "enhance"), "text": ("asr", "enhance")}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(reqs: list[str]) -> set[str]:
    return {_norm(re.match(r"[A-Za-z0-9._-]+", r.strip()).group(0)) for r in reqs}


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = {k: _requirement_names(v) for k, v in project["optional-dependencies"].items()}
    return _requirement_names(project["dependencies"]), extras


def allowed_extras(path: Path, extras: dict[str, set[str]]) -> tuple[str, ...]:
    """The extras a module may rely on, besides the base dependencies."""
    parts = path.relative_to(REPO).parts
    if parts[0] in ("bench", "fixtures") or parts[:3] == ("services", "ops", "models.py"):
        return tuple(extras)  # measures, test material, fetches for every stage
    if parts[:3] == ("services", "ops", "flower.py"):
        return ("ops",)
    if parts[:2] == ("services", "ops") and len(parts) > 3 and parts[2] in STAGE_EXTRAS:
        return STAGE_EXTRAS[parts[2]]  # an operator command with an extra of its own
    if parts[0] == "services" and parts[1] in STAGE_EXTRAS:
        return STAGE_EXTRAS[parts[1]]
    return ()


def third_party_imports(path: Path) -> set[str]:
    """Top-level names of absolute imports anywhere in the file (lazy imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in OURS:
                out.add(top)
    return out


def undeclared() -> list[str]:
    base, extras = declared()
    dists = packages_distributions()
    problems = []
    for root in ("common", "services", "bench", "fixtures"):
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            allowed = set(base).union(*(extras[e] for e in allowed_extras(path, extras)))
            parts = path.relative_to(REPO).parts
            if parts[0] == "services" and parts[1] in SHARED_BY_STAGES:
                allowed |= set.intersection(*(set().union(*(extras[e] for e in STAGE_EXTRAS[s]))
                                              for s in SHARED_BY_STAGES[parts[1]]))
            for module in sorted(third_party_imports(path)):
                names = {_norm(d) for d in dists.get(module, [])}
                if (rel, module) in CALLED_BY_STAGES:  # declared by every stage calling it
                    allowed_here = set.intersection(
                        *(extras[e] for e in CALLED_BY_STAGES[rel, module]))
                    if names & allowed_here:
                        continue
                if not names:
                    problems.append(f"{path.relative_to(REPO)}: {module} (not installed, "
                                    "not declared)")
                elif not names & allowed:
                    where = ", ".join(allowed_extras(path, extras)) or "base dependencies"
                    problems.append(f"{path.relative_to(REPO)}: {module} "
                                    f"(distribution {'/'.join(sorted(names))}; declare it in: "
                                    f"{where})")
    return problems


def test_every_import_is_declared() -> None:
    problems = undeclared()
    assert not problems, "undeclared third-party imports:\n" + "\n".join(problems)


def test_the_check_sees_lazy_and_undeclared_imports(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from scipy.signal import butter\n    import numpy, os\n"
                   "from . import x\n")
    assert third_party_imports(mod) == {"scipy", "numpy"}
    base, extras = declared()
    assert "numpy" in base and "scipy" not in base.union(*extras.values())
    assert "torch" in extras["enhance"] and "torch" not in base
    assert allowed_extras(REPO / "services/enhance/segments.py", extras) == (
        "enhance", "enhance-overlap")
    assert allowed_extras(REPO / "common/shards/audio.py", extras) == ()
