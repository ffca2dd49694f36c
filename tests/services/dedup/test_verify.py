"""Confirming candidate pairs: the same answer in worker processes as in the dedup process,
the first look never turning a copy away, unreadable fingerprints counted as unchecked."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.dedup_corpus import SR, TRANSFORMS
from services.dedup import verify
from services.dedup.fingerprint import compare, fingerprint
from services.dedup.index import ROW_BITS
from services.dedup.settings import DedupSettings
from services.dedup.verify import Rule, confirm, confirm_pool
from tests.services.dedup.helpers import clips
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)


@pytest.fixture(scope="module")
def shards() -> dict[int, list[np.ndarray]]:
    """Shard 0: the originals; shard 1: a copy of each per transform, in clip order."""
    cs = clips()
    return {0: [fingerprint(c.audio, SR) for c in cs],
            1: [fingerprint(f(c.audio), SR) for f in TRANSFORMS.values() for c in cs]}


def _pairs(shards) -> list[tuple[int, int]]:
    n0, n1 = len(shards[0]), len(shards[1])
    return [(a, 1 << ROW_BITS | b) for a in range(n0) for b in range(n1)]


def test_workers_give_the_same_pairs(shards, monkeypatch) -> None:
    s = DedupSettings()
    rule = Rule(s.dedup_max_ber, s.dedup_min_overlap, s.dedup_max_shift_seconds)
    pairs = _pairs(shards)
    here, missed = confirm(pairs, shards.get, rule)
    n = len(clips())
    assert missed == 0
    assert sorted((a, b & ((1 << ROW_BITS) - 1)) for a, b, _ in here) == sorted(
        (i % n, i) for i in range(len(shards[1])))  # every copy, nothing else
    monkeypatch.setattr(verify, "PARALLEL_MIN", 1)
    pool = confirm_pool(2)
    assert pool is not None
    try:
        spread, _ = confirm(pairs, shards.get, rule, pool, 2)
    finally:
        pool.shutdown()
    assert sorted(spread) == sorted(here)


def test_the_first_look_never_turns_a_copy_away(shards) -> None:
    s = DedupSettings()
    rule = Rule(s.dedup_max_ber, s.dedup_min_overlap, s.dedup_max_shift_seconds)
    for a in shards[0]:
        for b in shards[1]:
            full = compare(a, b, rule.max_shift, rule.min_overlap)
            quick = compare(a, b, rule.max_shift, rule.min_overlap, rule.max_ber + 0.1)
            if full.ber <= rule.max_ber:
                assert quick == full
            else:
                assert quick.ber > rule.max_ber


def test_a_pair_without_its_fingerprints_is_unchecked() -> None:
    rule = Rule(0.3, 0.5, 2.0)
    fp = np.arange(100, dtype=np.uint32)
    got, missed = confirm([(0, 1), (0, 5)], lambda shard: [fp, fp], rule)
    assert got == [(0, 1, 1.0)] and missed == 1  # row 5 is past the shard's end
