"""The spoken-text bench's measure (bench/text.py) on its sentence set: what it reports holds the
goals docs/text.md states (English and Japanese sentence-exact rates, the mora error rate)."""

from __future__ import annotations

from bench.text import measure


def test_measured_on_the_bench_sentences() -> None:
    m = measure()
    (eo, en), (jo, jn), (me, mt) = m["en"], m["ja"], m["mora"]
    assert en >= 100 and jn >= 100
    assert eo / en >= 0.85, m["en_miss"]
    assert jo / jn >= 0.9, m["ja_miss"]
    assert me / mt <= 0.03
    assert m["plain_agree"][0] == m["plain_agree"][1]
