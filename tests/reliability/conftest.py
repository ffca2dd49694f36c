from __future__ import annotations

import pytest

from tests.reliability.rig import Rig


@pytest.fixture
def rigs(tmp_path):
    """The rigs a test makes, closed after it (servers stopped, workers killed)."""
    made: list[Rig] = []
    yield made
    for r in made:
        r.close()
