"""``ONSEI_SHARD_PATTERN`` names shards and outputs inside their roots, never outside."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from services.ops.cli import cli


@pytest.mark.parametrize("pattern, why", [
    ("../{id}.tar", "'..' part"),
    ("a/../../{id:06d}.tar", "'..' part"),
    ("/etc/{id}.tar", "absolute path"),
    ("./{id}.tar", "'.' or '..' part"),
    ("a//{id}.tar", "an empty"),
    ("a\\..\\{id}.tar", "backslash"),
    ("{id:/>10}.tar", "other characters than digits"),  # fill: "/////////7"
    ("{id:c}{id:c}/x{id}.tar", "other characters than digits"),  # id 46 -> ".."
    ("{id!s:.>4}.tar", "other characters than digits"),
])
def test_a_pattern_that_climbs_is_refused(clean_env: pytest.MonkeyPatch, pattern: str,
                                          why: str) -> None:
    res = CliRunner().invoke(cli, ["config"], env={"ONSEI_SHARD_PATTERN": pattern})
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "ONSEI_SHARD_PATTERN" in res.output and "outside its root" in res.output
    assert why in res.output, res.output


@pytest.mark.parametrize("pattern, name", [
    ("shard-{id:06d}.tar", "shard-000046.tar"),
    ("x/{id}.tar", "x/46.tar"),
    ("part-{id:0>5}.tar", "part-00046.tar"),
    ("{id:x}/s.tar", "2e/s.tar"),
])
def test_patterns_inside_the_root_still_work(pattern: str, name: str) -> None:
    from common.settings import Settings

    assert Settings(shard_pattern=pattern).shard_name(46) == name
