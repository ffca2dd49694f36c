from __future__ import annotations

import pytest

from services.enhance.quality.cer import cer, edit_distance, normalize


def test_normalisation_ignores_case_punctuation_width_and_spaces() -> None:
    assert normalize("Hello, World!") == "helloworld"
    assert normalize("ＡＢＣ　です。") == "abcです"
    assert cer("The train leaves at seven.", "the train, leaves at seven") == 0.0


def test_cer_counts_edits_per_reference_character() -> None:
    assert edit_distance("kitten", "sitting") == 3
    assert cer("abcd", "abxd") == pytest.approx(0.25)
    assert cer("abcd", "") == 1.0
    assert cer("", "") == 0.0 and cer("", "x") == 1.0
    assert cer("わたしのなまえ", "わたしのなまえ") == 0.0
