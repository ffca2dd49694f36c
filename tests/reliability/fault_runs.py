"""What the fault campaigns (test_faults.py, test_faults_outages.py) share: the pipelines they
run, how long a run may take, making a rig that the ``rigs`` fixture closes, the final audit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.rig import Rig

REAL = pytest.param("real", marks=pytest.mark.slow, id="real")
DUMMY = pytest.param("dummy", id="dummy")


def timeouts(pipeline: str) -> float:
    return 150 if pipeline == "dummy" else 600


def make_rig(rigs: list[Rig], tmp_path: Path, s3_endpoint: str, pipeline: str, **kw) -> Rig:
    rig = Rig.create(tmp_path / "rig", s3_endpoint, pipeline=pipeline, **kw)
    rigs.append(rig)
    return rig


def finish(rig: Rig, timeout: float, allow_redone: bool = False) -> None:
    missing = rig.wait_all(timeout)
    assert not missing, rig.not_done(missing)
    rig.audit().assert_exactly_once(allow_redone=allow_redone)
