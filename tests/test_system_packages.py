"""The rule for tests that need a system package (tests/system_packages.py): in CI a missing one
fails the run, elsewhere the test is skipped naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import system_packages as sp
from tests.conftest import pytest_runtest_setup

REPO = Path(__file__).resolve().parents[1]


class _Item:
    """What the setup hook reads of a test: its ``needs`` marks."""

    def __init__(self, *packages: str) -> None:
        self.marks = [sp.needs(*packages).mark]

    def iter_markers(self, name: str) -> list[pytest.Mark]:
        return [m for m in self.marks if m.name == name]


@pytest.fixture
def absent(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(sp._PRESENT, "no-such-package", lambda: False)
    return "no-such-package"


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_a_missing_package_fails_in_ci(absent: str, ci: str, monkeypatch) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="no-such-package is not installed"):
        pytest_runtest_setup(_Item(absent))
    with pytest.raises(pytest.fail.Exception):
        sp.missing(absent)


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_a_missing_package_skips_outside_ci(absent: str, ci: str | None, monkeypatch) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="apt-get install no-such-package"):
        pytest_runtest_setup(_Item(absent))


def test_an_installed_package_runs_the_test(monkeypatch) -> None:
    monkeypatch.setitem(sp._PRESENT, "here", lambda: True)
    monkeypatch.setenv("CI", "true")
    pytest_runtest_setup(_Item("here"))  # neither raises


def test_an_unknown_package_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown system package"):
        sp.needs("espeak")


def test_ci_runs_with_ci_set() -> None:
    """.ci/run sets CI, whatever runs it: there the rule above fails the run."""
    assert "CI=true" in (REPO / ".ci" / "run").read_text()


def test_no_test_skips_on_a_system_package_by_itself() -> None:
    """Every test that needs espeak-ng or a Debian data package goes through the rule above: a
    skip of its own would turn a CI run without the package green."""
    words = ("espeak", "pocketsphinx", "fillets", "have_espeak", "clips()", "sphinx_lines")
    found = []
    for p in sorted((REPO / "tests").rglob("*.py")):
        text = p.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            if ("skipif" in line or "pytest.skip(" in line) and any(w in line for w in words):
                found.append(f"{p.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []
