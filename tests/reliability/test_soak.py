"""The soak driver itself (bench/soak.sh): a short run must report lost 0 / duplicated 0."""

from __future__ import annotations

import pytest

from tests.reliability.soak import main


@pytest.mark.slow
def test_short_soak_loses_nothing(capsys, tmp_path):
    rc = main(["--shards", "6", "--minutes", "0.4", "--every", "5", "--seed", "3",
               "--html", str(tmp_path / "soak.html")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "lost 0  duplicated 0  dead-lettered 0" in out
    assert (tmp_path / "soak.html").read_text().count('<img id="chart-') == 6
