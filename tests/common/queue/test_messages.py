"""A stage task's arguments, checked strictly before any work (common/queue/messages.py)."""

from __future__ import annotations

import pytest

from common.queue.messages import InvalidMessage, StageArgs, parse_args
from services.stages import PIPELINE


@pytest.mark.parametrize("args,kwargs,expected", [
    ([0], {}, StageArgs(0, None, False)),
    ([7], {"until": "tokenize", "force": True}, StageArgs(7, "tokenize", True)),
    ([2**63 - 1], {"until": None}, StageArgs(2**63 - 1, None, False)),
    ((3,), {"until": "enhance"}, StageArgs(3, "enhance", False)),
])
def test_accepted(args, kwargs, expected) -> None:
    assert parse_args(PIPELINE, "enhance" if kwargs.get("until") == "enhance" else "asr",
                      args, kwargs) == expected


@pytest.mark.parametrize("args,kwargs,words", [
    ([1.5], {}, "shard id 1.5 is not a whole number"),
    ([True], {}, "shard id True"),
    ([float("inf")], {}, "shard id inf"),
    ([None], {}, "shard id None"),
    (["1"], {}, "shard id '1'"),
    ([-1], {}, "shard id -1"),
    ([10**30], {}, f"shard id {10**30} is over {2**63 - 1}"),
    ([2**63], {}, "is over"),
    ([], {}, "expected one shard id, got 0"),
    ([1, 2], {}, "got 2 arguments"),
    ("1", {}, "are not a list"),
    ([1], [], "are not a mapping"),
    ([1], {"until": "bogus"}, "until 'bogus' is not a stage (one of asr, enhance, tokenize)"),
    ([1], {"until": 3}, "until 3 is not a stage"),
    ([1], {"force": "no"}, "force 'no' is not true or false"),
    ([1], {"force": 0}, "force 0 is not true or false"),
    ([1], {"shard": 2}, "unexpected arguments shard"),
])
def test_refused_with_one_line_saying_why(args, kwargs, words) -> None:
    with pytest.raises(InvalidMessage) as e:
        parse_args(PIPELINE, "asr", args, kwargs)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_until_before_this_stage_is_refused() -> None:
    with pytest.raises(InvalidMessage, match="until 'asr' comes before 'tokenize'"):
        parse_args(PIPELINE, "tokenize", [1], {"until": "asr"})


def test_a_huge_value_is_quoted_short() -> None:
    with pytest.raises(InvalidMessage) as e:
        parse_args(PIPELINE, "asr", ["x" * 10_000], {})
    assert len(str(e.value)) < 200
