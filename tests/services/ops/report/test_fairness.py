"""Drop shares per filter by length class and by speaker, and the warning when one class or
one speaker loses far more than the rest."""

from __future__ import annotations

from services.ops.report.fairness import Fairness, bucket, card_section, markdown


def _fair() -> Fairness:
    f = Fairness()
    for i in range(20):  # short segments: half removed for music; long ones: none
        f.add(1.2, "a", ["music>0.5"] if i % 2 else [])
        f.add(8.0, "b", [])
    for _ in range(10):
        f.add(3.0, "c", ["multi_speaker", "dnsmos_ovrl<2"] if _ < 5 else [])
    return f


def test_buckets_edges() -> None:
    assert [bucket(x) for x in (0.5, 1.99, 2.0, 4.9, 5.0, 14.9, 15.0, 60.0)] == [
        "< 2 s", "< 2 s", "2-5 s", "2-5 s", "5-15 s", "5-15 s", "> 15 s", "> 15 s"]


def test_table_counts_each_reason_kind_per_class() -> None:
    headers, rows = _fair().table("length")
    assert headers == ["length", "segments", "removed (any)", "dnsmos_ovrl<2", "multi_speaker",
                       "music>0.5"]
    got = {r[0]: r[1:] for r in rows}
    assert got["< 2 s"] == ["20", "50.0 %", "0.0 %", "0.0 %", "50.0 %"]
    assert got["2-5 s"] == ["10", "50.0 %", "50.0 %", "50.0 %", "0.0 %"]
    assert got["5-15 s"][:2] == ["20", "0.0 %"]
    _, speakers = _fair().table("speaker")
    assert [r[0] for r in speakers] == ["a", "b", "c"]  # most segments first


def test_warns_about_the_class_and_speaker_that_lose_far_more() -> None:
    w = _fair().warnings()
    assert any(x.startswith("music>0.5: segments < 2 s lose 50 %") for x in w), w
    assert any(x.startswith("music>0.5: speaker a lose 50 %") for x in w), w
    assert any(x.startswith("multi_speaker: speaker c") for x in w), w
    assert not any("speaker b" in x or "5-15 s" in x for x in w), w


def test_an_even_filter_is_not_warned_about() -> None:
    f = Fairness()
    for i in range(40):
        f.add(1.0 + (i % 4) * 5, f"s{i % 3}", ["music>0.5"] if (i // 4) % 5 == 0 else [])
    assert f.warnings() == []


def test_merge_and_card_sections() -> None:
    a, b = Fairness(), Fairness()
    a.add(1.0, "x", ["music>0.5"])
    b.add(1.0, "x", [])
    a.merge(b)
    assert a.table("length")[1] == [["< 2 s", "2", "50.0 %", "50.0 %"]]
    text = "\n".join(card_section([a, b]))
    assert "## Who the filters removed" in text and "music\\>0.5" in text
    assert "`multi_speaker` is off by default" in text  # the card says which, and why
    assert "miss the goal" in text and "- `language`:" in text  # and which stay on anyway
    assert markdown(Fairness()) == []


def test_report_names_the_filters_off_and_those_missing_the_goal() -> None:
    from services.ops.report.fairness import html

    f = Fairness()
    f.add(1.0, "<b>x</b>", ["music>0.5"])
    page = html(f)
    assert '<ul class="limits">' in page and "<code>multi_speaker</code> is off" in page
    assert "<code>language</code> is on and misses the goal" in page
    assert "<b>x</b>" not in page  # a speaker's name is escaped
