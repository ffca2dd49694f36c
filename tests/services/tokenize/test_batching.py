import random

import pytest

from services.tokenize.batching import plan_batches


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_buckets_cover_all_within_limits(seed: int) -> None:
    rng = random.Random(seed)
    lengths = [rng.randint(50, 1500) for _ in range(700)]  # 1-30 s segments at 50 Hz
    plan = plan_batches(lengths, max_frames=12_000, max_items=64, max_waste=0.03)
    flat = sorted(i for b in plan.batches for i in b)
    assert flat == list(range(len(lengths)))
    for b in plan.batches:
        longest = max(lengths[i] for i in b)
        assert lengths[b[0]] == longest
        assert len(b) <= 64
        assert len(b) == 1 or len(b) * longest <= 12_000
        assert 1 - sum(lengths[i] for i in b) / (len(b) * longest) <= 0.03 + 1e-9
    assert plan.waste <= 0.03
    assert len(plan.batches) < len(lengths) / 4  # it does batch


def test_single_and_empty() -> None:
    assert plan_batches([], 100).batches == []
    p = plan_batches([10], 100)
    assert p.batches == [[0]] and p.waste == 0.0
