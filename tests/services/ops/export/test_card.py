"""The dataset card shows text from the data as it is: a backtick or HTML in the output root's
name, a language or a done record's model neither ends a code span nor
becomes markup (read back with a CommonMark parser, tables on, raw HTML allowed as on the
Hub)."""

from __future__ import annotations

from html import unescape
from pathlib import Path

from markdown_it import MarkdownIt

from common.ledger.store import Ledger
from common.storage import open_store
from services.ops.export.run import export
from services.ops.export.write import SplitPlan
from services.stages import PIPELINE
from tests.services.ops.export.synth import default_run, write_run

HOSTILE = "o`ut<img src=x onerror=alert(1)>"


def test_data_in_the_card_is_escaped(make_settings, tmp_path: Path) -> None:
    root = tmp_path / HOSTILE
    s = make_settings(output_url=str(root))
    store = open_store(s.output_url, s)
    run = default_run(files_per_shard=3, shards=3)
    run.languages["000000"] = "<b>en</b>"
    write_run(store, s, run)
    Ledger(store, s, PIPELINE).mark_done("asr", 0, {"model": "w|` <script>x</script>",
                                                    "version": "1"})
    to = tmp_path / "set"
    export(s, s.output_url, str(to), plan=SplitPlan(validation_fraction=0.0))
    card = (to / "README.md").read_text()
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(card)
    assert "<img" not in html and "<b>" not in html and "<script" not in html
    assert f"<code>{root}</code>" in unescape(html.replace("&amp;", "&"))
    assert "<td>&lt;b&gt;en&lt;/b&gt;</td>" in html
    assert '<code>{&quot;model&quot;: &quot;w|` &lt;script&gt;x&lt;/script&gt;&quot;' in html
