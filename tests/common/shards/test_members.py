"""common/shards/members.py: one outcome per key, the same for every stage."""

from __future__ import annotations

from pathlib import Path

from common.shards.members import choose_audio, iter_keys
from fixtures.speechgen import make_tar


def _outcomes(path: Path, **kw) -> list[tuple[str | None, str | None, str | None]]:
    return [(k.key, k.ext, k.error) for k in iter_keys(path, **kw)]


def test_choose_audio() -> None:
    assert choose_audio({"flac": b"", "json": b""}) == ("flac", None)
    assert choose_audio({"take2.wav": b""}) == ("take2.wav", None)
    assert choose_audio({"json": b""}) == (None, "no_audio")
    assert choose_audio({"wav": b"", "flac": b""}) == (None, "ambiguous_audio:flac,wav")


def test_two_audio_members_for_one_key_are_an_error(tmp_path: Path) -> None:
    """a.wav + a.flac: asr once took one and enhance the other (text and audio mismatched)."""
    p = make_tar(tmp_path / "s.tar", [("a.wav", b"W"), ("a.flac", b"F"), ("b.flac", b"B")])
    assert _outcomes(p) == [("a", None, "ambiguous_audio:flac,wav"), ("b", "flac", None)]


def test_dotted_name_is_audio(tmp_path: Path) -> None:
    p = make_tar(tmp_path / "s.tar", [("clip.take2.wav", b"W"), ("clip.json", b"{}")])
    [k] = list(iter_keys(p))
    assert (k.key, k.ext, k.error, k.audio) == ("clip", "take2.wav", None, b"W")
    assert set(k.files) == {"take2.wav", "json"}


def test_same_member_twice_is_an_error(tmp_path: Path) -> None:
    p = make_tar(tmp_path / "s.tar", [("a.wav", b"1"), ("a.wav", b"2"), ("b.wav", b"B")])
    assert _outcomes(p) == [("a", None, "duplicate_member"), ("b", "wav", None)]


def test_key_coming_back_first_copy_wins(tmp_path: Path) -> None:
    p = make_tar(tmp_path / "s.tar", [("a.wav", b"1"), ("b.wav", b"B"), ("a.wav", b"2"),
                                    ("a.json", b"{}"), ("b.wav", b"3")])
    out = list(iter_keys(p))
    assert [(k.key, k.error) for k in out] == [("a", None), ("b", None), ("a", "duplicate_key"),
                                               ("b", "duplicate_key")]
    assert out[0].audio == b"1"


def test_error_member_before_the_sample_does_not_hide_it(tmp_path: Path) -> None:
    """A bad sidecar seen first: the audio still goes on (noted); a bad audio member seen first
    makes the key an error -- one outcome per key either way."""
    p = make_tar(tmp_path / "s.tar", [("a.json", b"x" * 500), ("a.wav", b"W"),
                                    ("b.wav", b"y" * 5000), ("b.json", b"{}"),
                                    ("c.json", b"z" * 500)])
    out = list(iter_keys(p, max_member_bytes=1000, max_sidecar_bytes=100))
    assert [(k.key, k.ext, k.error) for k in out] == [
        ("a", "wav", None), ("b", None, "member_too_large:5000>1000"),
        ("c", None, "member_too_large:500>100")]
    assert out[0].notes == ["member_too_large:500>100:json"]


def test_unsafe_member_is_its_own_error(tmp_path: Path) -> None:
    p = make_tar(tmp_path / "s.tar", [("a.wav", b"W"), ("../evil.wav", b"E"), ("a.json", b"{}")])
    out = list(iter_keys(p))
    assert [(k.key, k.name, k.error) for k in out] == [
        (None, "../evil.wav", "unsafe_member:parent_traversal"), ("a", "a.wav", None)]
