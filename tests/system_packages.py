"""The system packages some tests need (Debian names; `.ci/run` installs them): one rule for all.

In CI (``CI`` set and not false: `.ci/run` sets it) a missing package FAILS the test that needs
it: a run must never go green by skipping the stage, end-to-end or dedup tests. Elsewhere the
test is skipped, naming the package, so a developer without it can run the rest.

A module or test marks what it needs with ``pytestmark = needs(ESPEAK)`` (checked before each
test by tests/conftest.py); a fixture calls :func:`require`, or :func:`missing` when what it
read from the package came back empty.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

ESPEAK = "espeak-ng"
POCKETSPHINX = "pocketsphinx-testdata"
FILLETS = "fillets-ng-data"
CHROMIUM = "chromium"

# what the tests read from each package: it is installed when this holds
_PRESENT: dict[str, Callable[[], bool]] = {
    ESPEAK: lambda: shutil.which("espeak-ng") is not None,
    POCKETSPHINX: lambda: all((Path("/usr/share/pocketsphinx/test/data") / d).is_dir()
                              for d in ("librivox", "cards")),
    FILLETS: lambda: Path("/usr/share/games/fillets-ng/sound").is_dir(),
    CHROMIUM: lambda: (shutil.which("chromium") or shutil.which("chromium-browser")) is not None,
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def installed(package: str) -> bool:
    return _PRESENT[package]()


def missing(package: str) -> NoReturn:
    """This test cannot run without ``package``: a failure in CI, a skip elsewhere."""
    why = f"{package} is not installed (apt-get install {package})"
    if in_ci():
        pytest.fail(f"{why}: CI must have it (.ci/run installs it)", pytrace=False)
    pytest.skip(why)


def require(*packages: str) -> None:
    for p in packages:
        if not installed(p):
            missing(p)


def needs(*packages: str) -> pytest.MarkDecorator:
    """A mark: the test needs these packages (tests/conftest.py calls :func:`require`)."""
    unknown = [p for p in packages if p not in _PRESENT]
    if unknown:
        raise ValueError(f"unknown system package {unknown}: known {sorted(_PRESENT)}")
    return pytest.mark.needs(*packages)
