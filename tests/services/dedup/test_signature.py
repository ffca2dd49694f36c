"""The signature tells copies of one recording from look-alikes, on real speech
(pocketsphinx-testdata's LibriVox reader), at the default settings."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from fixtures.dedup_corpus import SR, TRANSFORMS, other_speakers, trimmed_text
from services.dedup.fingerprint import compare, fingerprint
from services.dedup.settings import DedupSettings
from services.dedup.signature import SignatureError, SignatureWriter, read_signatures
from services.dedup.text import minhash, normalise, text_keys
from services.dedup.verify import Rule
from tests.services.dedup.helpers import clips
from tests.system_packages import ESPEAK, POCKETSPHINX, needs

pytestmark = needs(ESPEAK, POCKETSPHINX)


@pytest.fixture(scope="module")
def rule() -> Rule:
    s = DedupSettings()
    return Rule(s.dedup_max_ber, s.dedup_min_overlap, s.dedup_max_shift_seconds)


def _ber(a: np.ndarray, b: np.ndarray, rule: Rule) -> float:
    return compare(fingerprint(a, SR), fingerprint(b, SR), rule.max_shift,
                   rule.min_overlap).ber


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_every_copy_matches_acoustically_and_by_text(transform: str, rule: Rule) -> None:
    for c in clips():
        copy = TRANSFORMS[transform](c.audio)
        assert _ber(c.audio, copy, rule) <= rule.max_ber, (c.name, transform)
        shared = set(text_keys(c.text)) & set(text_keys(trimmed_text(c.text, transform)))
        assert shared, (c.name, transform)  # a candidate pair: at least one LSH band agrees


def test_same_words_by_another_speaker_do_not_match(rule: Rule) -> None:
    for c in clips():
        for other in other_speakers(c.text):
            assert set(text_keys(c.text)) == set(text_keys(other.text))  # text cannot tell
            assert _ber(c.audio, other.audio, rule) > rule.max_ber + 0.1, (c.name, other.name)


def test_other_words_by_the_same_speaker_do_not_match(rule: Rule) -> None:
    for a, b in itertools.combinations(clips(), 2):
        assert not set(text_keys(a.text)) & set(text_keys(b.text))
        assert _ber(a.audio, b.audio, rule) > rule.max_ber + 0.1, (a.name, b.name)


def test_text_normalisation() -> None:
    assert normalise("  Hello,   WORLD! «Ｆｕｌｌ» ") == "hello world full"
    assert minhash("") is None and text_keys("...") == []
    assert text_keys("Hello, world.") == text_keys("hello world")
    assert text_keys("きょうは とても いい てんき です ね。")  # no spaces needed
    # an ASR writes a spoken number either way
    assert text_keys("Ten of clubs.", "en") == text_keys("10 of clubs", "en")
    assert normalise("Episode 1,024!", "en") == "episode one thousand and twenty four"
    assert normalise("第10話", "ja").replace(" ", "") == "第十話"
    assert normalise("10 of clubs", "xx") == normalise("10 of clubs") == "10 of clubs"


def test_a_damaged_file_is_refused_with_its_reason(tmp_path: Path) -> None:
    w = SignatureWriter()
    w.add("k_0000", "k", 0, 1.0, "hello there", "en", None, clips()[0].audio, SR)
    good = tmp_path / "good.parquet"
    w.write(good)
    assert read_signatures(good).num_rows == 1
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(SignatureError, match="corrupt"):
        read_signatures(bad)
    with pytest.raises(SignatureError, match="missing"):
        read_signatures(tmp_path / "none.parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": ["x"]}), other)
    with pytest.raises(SignatureError, match="signature format"):
        read_signatures(other)


def test_the_format_before_the_quality_column_is_read(tmp_path: Path) -> None:
    """A shard enhanced by the version before: read, indexed, its quality unknown."""
    import pyarrow.parquet as pq

    from services.dedup.index import Index
    from services.dedup.signature import FORMAT_NO_QUALITY, META_KEY, has_quality
    from services.records import Quality

    w = SignatureWriter()
    w.add("k_0000", "k", 0, 1.0, "hello there", "en", 3.0, clips()[0].audio, SR,
          quality=Quality(multi_speaker=True))
    new = tmp_path / "new.parquet"
    w.write(new)
    assert has_quality(new)
    assert read_signatures(new, ["quality"]).column("quality").to_pylist() == [
        Quality(multi_speaker=True).to_json()]
    table = read_signatures(new).drop_columns(["quality"])
    old = tmp_path / "old.parquet"
    pq.write_table(table.replace_schema_metadata({META_KEY: FORMAT_NO_QUALITY.encode()}), old)
    assert read_signatures(old).num_rows == 1 and not has_quality(old)
    ix = Index(tmp_path / "i.duckdb", 256)
    assert ix.add_shard(0, old) == 1 and ix.add_shard(1, new) == 1
    assert sorted(ix.con.execute("SELECT shard, quality FROM segments").fetchall()) == [
        (0, None), (1, Quality(multi_speaker=True).to_json())]
    ix.close()
    bad = tmp_path / "bad.parquet"  # the old format's name on the new columns: refused
    pq.write_table(read_signatures(new).replace_schema_metadata(
        {META_KEY: FORMAT_NO_QUALITY.encode()}), bad)
    with pytest.raises(SignatureError, match="unexpected columns"):
        read_signatures(bad)
