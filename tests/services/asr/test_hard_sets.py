"""The hard sets (fixtures/hard_speech.py: fast speech, an 8 kHz band, quiet and clipped recordings,
utterances under 2 s, speech under a music bed, fast Japanese) through the stage at its
defaults: each set's error of the kept text within its bound (below), measured against the
peer at its own defaults by the bench, whose rows keep the per-file tables."""

from __future__ import annotations

import statistics

import pytest

from fixtures.longform import LongForm, error_rate, kana_cer
from tests.system_packages import ESPEAK, require

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Each set's bound on the stage's mean error, from the quick hard sets at the defaults
# (2026-12-07, python -m bench.asr_peer hard --quick --sweep --config defaults:), ours / the
# peer's defaults: fast 0.126 / 0.110, narrowband 0.610 / 0.570, quiet 0.234 / 0.213 (not
# met: ours is worse), loud 0.029 / 0.039, short 0.444 / 0.500 (both lose the same two
# utterances to language ID), music 0.022 / 0.110 (met). The peer's figure plus 0.005 where the
# goal is met; ours plus 0.02 where it is not yet, so a regression shows while the gap is open
# (docs/asr.md). ja-fast since skipped sentences are decoded as one stretch (coverage.py), on
# a later machine's build of the sets (espeak-ng's audio differs between builds): CER 0.510 /
# 0.503 (not met by 0.002 over the allowance: bound ours plus 0.02), Kana-CER 0.179 / 0.245
# (met; bound ours plus 0.02, the peer's figure on the first build being 0.174). quiet since a
# quiet file is heard raised (level.py), on that later build: 0.117 / 0.213 (met; the peer's
# figure on the first build plus 0.005).
BOUND = {"fast": 0.146, "narrowband": 0.63, "quiet": 0.218, "loud": 0.044, "short": 0.505,
         "music": 0.115, "ja-fast": 0.53}
KANA_BOUND = 0.20  # ja-fast's Kana-CER


@pytest.fixture(scope="module")
def hard() -> dict[str, list[LongForm]]:
    require(ESPEAK)
    from fixtures.hard_speech import build

    return build(quick=True)


def _text(stage, form: LongForm) -> str:
    line = stage.transcribe_file("f", form.audio).line
    return ("" if form.language == "ja" else " ").join(s.text for s in line.kept)


@pytest.mark.parametrize("name", list(BOUND))
def test_each_hard_set_within_its_bound(asr_stage, hard, name) -> None:
    forms = hard[name]
    texts = [_text(asr_stage, f) for f in forms]
    errors = [error_rate(f.language, f.reference, t) for f, t in zip(forms, texts)]
    print(name, [round(e, 4) for e in errors])
    assert statistics.fmean(errors) <= BOUND[name]
    if name == "ja-fast":
        kana = statistics.fmean(kana_cer(f.reference, t) for f, t in zip(forms, texts))
        assert kana <= KANA_BOUND
