"""The scrub finds a test utterance inside a longer, changed segment by its audio, and a
test transcript's long n-grams in a segment's text; it leaves other speech alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from common.shards.audio import resample
from fixtures.speechgen import synth
from services.dedup.fingerprint import fingerprint
from services.ops.provenance.scrub import ScrubIndex
from tests.system_packages import ESPEAK, needs

TEXT = "the lighthouse keeper counted seven ships before the fog came down over the bay"


@needs(ESPEAK)
def test_audio_and_text(tmp_path: Path) -> None:
    root = tmp_path / "my-test-set"
    root.mkdir()
    utt = synth(TEXT, "en-us")
    sf.write(root / "u1.wav", utt, 16000)
    (root / "u1.txt").write_text(TEXT)
    sf.write(root / "short.flac", synth("yes", "en"), 16000)  # no transcript found: audio only
    ix = ScrubIndex.build([root])
    assert ix.utterances["my-test-set"] == 2 and ix.without_text["my-test-set"] == 1
    other = synth("a completely different sentence about apples and the autumn market", "en")
    inside = np.concatenate([other, 0.5 * utt, other])
    inside = resample(resample(inside, 16000, 22050), 22050, 16000)
    assert ix.by_audio(fingerprint(inside, 16000)) == "my-test-set"
    assert ix.by_audio(fingerprint(other, 16000)) is None
    same_words = synth(TEXT, "en+f3")  # another recording of the words: not by audio...
    assert ix.by_audio(fingerprint(same_words, 16000)) is None
    # ...but by its text (8-word n-grams, numbers and case folded)
    assert ix.by_text("Well, the Lighthouse keeper counted 7 ships before the fog", "en") == \
        "my-test-set"
    assert ix.by_text("the lighthouse keeper counted seven ships") is None
