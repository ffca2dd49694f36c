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


class _Fake:
    """A transcriber whose decoder returns, per row, a prompted and an unprompted text."""

    def __init__(self, floor: float, with_prompt: list[float], plain: list[float]) -> None:
        from types import SimpleNamespace

        from services.asr.batched import ClipTranscriber
        from services.asr.settings import AsrSettings

        self.tr = object.__new__(ClipTranscriber)
        self.tr.model = SimpleNamespace(model=SimpleNamespace(device="cpu"))
        self.tr.settings = AsrSettings(asr_prompt_fallback_logprob=floor)
        self.calls: list[tuple[list[int], bool]] = []

        def decode(features, language, rows, beam, frames, no_repeat, prompted=True):
            from services.asr.batched import ClipText

            ids = [int(f[0]) for f in features]
            self.calls.append((ids, prompted))
            lp = with_prompt if prompted else plain
            return [ClipText(f"{'p' if prompted else 'n'}{i}", lp[i], 0.0) for i in ids]

        self.tr._decode = decode  # type: ignore[method-assign]


def test_an_unsure_prompted_window_is_decoded_again_without_the_prompt() -> None:
    import numpy as np

    fake = _Fake(-0.6, with_prompt=[-0.2, -0.7, -0.9], plain=[-0.1, -0.5, -1.2])
    out = fake.tr.transcribe(np.arange(3.0)[:, None], "ja")
    # rows 1 and 2 were under the floor: decoded again; row 1 likelier without the prompt
    assert fake.calls == [([0, 1, 2], True), ([1, 2], False)]
    assert [t.text for t in out] == ["p0", "n1", "p2"]


def test_no_second_decode_when_off_or_no_prompt_for_the_language() -> None:
    import numpy as np

    fake = _Fake(0.0, with_prompt=[-0.9], plain=[-0.1])
    assert [t.text for t in fake.tr.transcribe(np.zeros((1, 1)), "ja")] == ["p0"]
    fake = _Fake(-0.6, with_prompt=[-0.9], plain=[-0.1])
    fake.tr.transcribe(np.zeros((1, 1)), "sv")  # no punctuation prompt for Swedish
    assert fake.calls == [([0], True)]
