"""Text from a run, on a screen: every control character shown as its escape, rich markup
escaped, anything else as it is."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from common.display import has_control, markup, visible

CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7f, 0xa0))] + [
    "\u2028", "\u2029", "\u202e", "\u2066"]


def test_every_control_character_is_shown_as_its_escape() -> None:
    for c in CONTROLS:
        shown = visible(f"a{c}b")
        assert has_control(c) and shown.startswith("a\\") and shown.endswith("b"), repr(c)
        assert not has_control(shown), repr(c)
    assert visible("\x1b[2J\n") == "\\x1b[2J\\n"
    text = "日本語 [b] <i> {\"id\": 1} café"  # no control character: unchanged
    assert visible(text) == text and not has_control(text)


def test_markup_prints_as_written() -> None:
    for text in ("mix[/x].wav", "[link=http://x]a[/link]", "[bold]b", "\\[x]", "a\\", ":smile:"):
        out = StringIO()
        Console(file=out, width=200, emoji=False).print(f"[red]{markup(text)}[/]")
        assert out.getvalue() == text + "\n", (text, out.getvalue())
