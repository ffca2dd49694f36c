"""Decoder calls on a CPU: rows in calls of CPU_DECODE_ROWS, a short last call joined to the
one before (greedy decoding costs a call its longest text's steps)."""

from __future__ import annotations

import pytest

from services.asr.batched import CPU_DECODE_ROWS, cpu_decode_parts


def sizes(n: int, rows: int = CPU_DECODE_ROWS) -> list[int]:
    return [p.stop - p.start for p in cpu_decode_parts(n, rows)]


@pytest.mark.parametrize(("n", "expected"), [
    (0, []), (1, [1]), (4, [4]), (5, [5]), (6, [6]), (7, [4, 3]), (8, [4, 4]),
    (10, [4, 6]), (11, [4, 4, 3]), (16, [4, 4, 4, 4]),
])
def test_a_short_last_call_joins_the_one_before(n: int, expected: list[int]) -> None:
    assert sizes(n, 4) == expected


@pytest.mark.parametrize("n", range(40))
def test_every_row_once_in_order_and_no_call_over_one_and_a_half_times_the_rows(n: int) -> None:
    parts = cpu_decode_parts(n)
    covered = [i for p in parts for i in range(p.start, p.stop)]
    assert covered == list(range(n))
    assert all(0 < p.stop - p.start <= CPU_DECODE_ROWS * 3 // 2 for p in parts)
