"""`onsei report`: numbers from synthetic outputs, and the HTML looked at in headless Chromium."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.ops.report.collect import collect
from services.ops.report.render import render_html
from tests.services.ops.report.synth import write_garbage, write_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHARTS = ("hours", "languages", "segment_languages", "durations", "reasons", "throughput",
          "walltimes",
          # services/ops/report/quality.py, then trainers.py
          "dnsmos", "speaker", "fidelity", "overlap_music", "speaker_hours", "filters",
          "speakers_per_file", "segments_per_speaker", "pitch", "speaking_rate")


def test_collect_counts_match_outputs(make_settings):
    s = make_settings()
    totals = write_run(s, shards=3, files_per_shard=4)
    data = collect(s.output_url, s)
    assert data.files == totals["files"] == 12
    assert data.files_ok == totals["ok"]
    assert len(data.segment_durations) == totals["kept_segments"]
    assert data.seconds_kept == pytest.approx(totals["kept_seconds"])
    assert data.token_lines == totals["token_lines"]
    assert data.drop_reasons == {"language": 3}
    assert data.error_reasons == {"undecodable": 1}
    assert data.segment_reasons["low_logprob"] == totals["ok"]
    assert set(data.languages) == {"ja", "en", "fr"}  # errors have no language
    for stage in ("asr", "enhance", "tokenize"):
        assert data.stages[stage].done == 3
        assert data.stages[stage].seconds_in == pytest.approx(180.0)
    assert data.stages["enhance"].dead_lettered == 1
    assert data.failed[0]["shard"] == s.shard_name(3)
    assert data.slowest[0]["wall_seconds"] == max(r["wall_seconds"] for r in data.slowest)


def test_kept_seconds_per_segment_language() -> None:
    from services.ops.report.collect import ReportData, _add_asr_rows
    from services.records import AsrLine

    line = AsrLine.from_dict({"key": "k", "language": "ja", "duration": 20.0, "status": "ok",
                              "segments": [
                                  {"idx": 0, "start": 0.0, "end": 5.0, "kept": True},
                                  {"idx": 1, "start": 6.0, "end": 9.0, "kept": True,
                                   "language": "en"},
                                  {"idx": 2, "start": 10.0, "end": 14.0, "kept": False,
                                   "reason": "language", "language": "de"}]})
    data = ReportData("s3://x", "neucodec", "now", {})
    _add_asr_rows(data, [line])
    # a segment written without its own language is in its line's
    assert dict(data.segment_language_seconds) == {"ja": 5.0, "en": 3.0}
    assert data.languages == {"ja": 1}


def test_tokens_are_read_where_the_tokenizers_spec_puts_them(make_settings):
    s = make_settings(tokenize_codec="neucodec")
    totals = write_run(s, shards=2)
    assert collect(s.output_url, s).token_lines == totals["token_lines"] > 0
    other = make_settings(output_url=s.output_url, tokenize_codec="distill-neucodec")
    assert collect(s.output_url, other).token_lines == 0  # another codec's run: not there yet


def test_superseded_failure_not_counted(make_settings):
    from common.ledger.store import Ledger
    from common.storage import open_store
    from services.stages import PIPELINE

    s = make_settings()
    write_run(s, shards=2)
    ledger = Ledger(open_store(s.output_url), s, PIPELINE)
    ledger.mark_failed("asr", 1, "transient", attempts=1)  # then a done record exists already
    data = collect(s.output_url, s)
    assert data.stages["asr"].failed == 0


def test_damaged_output_is_reported_not_fatal(make_settings):
    s = make_settings()
    write_run(s, shards=1)
    write_garbage(s)
    data = collect(s.output_url, s)
    assert any("shard-000099" in u for u in data.unreadable)
    assert "Unreadable outputs" in render_html(data)


def _pngs(html: str) -> dict[str, bytes]:
    found = re.findall(r'<img id="chart-(\w+)"[^>]*src="data:image/png;base64,([^"]+)"', html)
    return {cid: base64.b64decode(b64) for cid, b64 in found}


def test_html_self_contained_and_escaped(make_settings):
    s = make_settings()
    write_run(s)
    html = render_html(collect(s.output_url, s))
    pngs = _pngs(html)
    assert set(pngs) == set(CHARTS)
    for cid, png in pngs.items():
        assert png.startswith(PNG_MAGIC) and len(png) > 2000, cid
    assert "<script" not in html  # the failure reason "<script>" came from data: escaped
    assert "&lt;script&gt;" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing fetched from elsewhere


def test_empty_output_root_renders(make_settings):
    s = make_settings()
    html = render_html(collect(s.output_url, s))
    assert set(_pngs(html)) == set(CHARTS)


def test_cli_writes_html_and_json(make_settings, tmp_path, monkeypatch):
    s = make_settings()
    write_run(s)
    out = tmp_path / "r" / "report.html"
    monkeypatch.setenv("ONSEI_TOKENIZE_CODEC", s.tokenize_codec)
    res = CliRunner().invoke(
        __import__("services.ops.cli", fromlist=["cli"]).cli,
        ["report", "--output", s.output_url, "--html", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output[: res.output.rindex("}") + 1])
    assert summary["stages"]["asr"]["done"] == 3
    assert summary["hours"]["kept"] > 0
    assert out.read_text().startswith("<!DOCTYPE html>")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Appended to a COPY of the report: records what the browser actually decoded and laid out.
_PROBE = """<script>
window.addEventListener('load', () => {
  for (const img of document.querySelectorAll('img.chart')) {
    img.setAttribute('data-natural', img.naturalWidth + 'x' + img.naturalHeight);
    img.setAttribute('data-complete', String(img.complete));
    const r = img.getBoundingClientRect();
    img.setAttribute('data-shown', Math.round(r.width) + 'x' + Math.round(r.right));
  }
  document.body.setAttribute('data-viewport', String(window.innerWidth));
  document.body.setAttribute('data-probed', '1');
});
</script>"""


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={tmp / 'profile'}",
         "--virtual-time-budget=3000", *args],
        check=False, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_report_renders_in_chromium(make_settings, tmp_path):
    s = make_settings()
    write_run(s, shards=4)
    html = render_html(collect(s.output_url, s))
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    res = _chromium(tmp_path, "--dump-dom", "--window-size=1400,1600", probe.as_uri())
    dom = res.stdout
    assert 'data-probed="1"' in dom, res.stderr[-2000:]
    assert 'data-viewport="1400"' in dom
    sizes = dict(re.findall(r'id="chart-(\w+)"[^>]*data-natural="(\d+x\d+)"', dom))
    shown = dict(re.findall(r'id="chart-(\w+)"[^>]*data-shown="(\d+x\d+)"', dom))
    assert set(sizes) == set(shown) == set(CHARTS), sizes
    for cid, wh in sizes.items():
        w, h = map(int, wh.split("x"))
        assert w > 100 and h > 100, (cid, wh)  # decoded by the browser, not a broken image
        width, right = map(int, shown[cid].split("x"))
        # at 1400 px each chart is shown at its own size (its labels were checked at that
        # size by test_chart_labels_readable), whole, inside the window
        assert width == w and right <= 1400, (cid, wh, shown[cid])

    shot = tmp_path / "shot.png"
    report = tmp_path / "report.html"
    report.write_text(html, encoding="utf-8")
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", report.as_uri())
    from PIL import Image, ImageStat

    img = Image.open(shot).convert("L")
    assert img.size[0] > 0 and ImageStat.Stat(img).stddev[0] > 10  # not a blank page


def _label_problems(fig) -> list[str]:
    """Tick labels that touch or overlap their neighbours, or are too small to read."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    for ax in fig.axes:
        for axis, along in ((ax.xaxis, 0), (ax.yaxis, 1)):
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            for t in labels:
                if t.get_fontsize() < 7.5:
                    problems.append(f"{ax.get_title()}: {t.get_text()!r} at {t.get_fontsize()}pt")
            boxes = sorted((t.get_window_extent(renderer) for t in labels),
                           key=lambda b: b.extents[along])
            for a, b in itertools.pairwise(boxes):
                gap = b.extents[along] - a.extents[along + 2]
                if gap < 4:  # pixels at the saved dpi: labels must not run together
                    problems.append(f"{ax.get_title()}: {axis.axis_name} labels "
                                    f"{[t.get_text() for t in labels]} {gap:.1f}px apart")
                    break
    return problems


@pytest.mark.parametrize("language_seconds", [
    {"en": 7.2, "ja": 2.4},  # seconds of speech: 0.002 h ran together as 0.000000.00025...
    {"en": 1800.0, "ja": 640.0, "fr": 75.0},
    {"en": 3.1e7, "ja": 9.0e6},  # 10,000 hours
])
def test_chart_labels_readable(make_settings, monkeypatch, language_seconds):
    from services.ops.report import charts, render

    s = make_settings()
    write_run(s, shards=4)
    data = collect(s.output_url, s)
    data.language_seconds = language_seconds
    data.seconds_asr_in = sum(language_seconds.values())
    problems: list[str] = []
    titles: list[str] = []
    real_png = charts.png

    def checked(fig):
        titles.append(fig.axes[0].get_title())
        problems.extend(_label_problems(fig))
        return real_png(fig)

    monkeypatch.setattr(charts, "png", checked)
    render.render_html(data)
    assert len(titles) == len(CHARTS)
    assert not problems, problems
    unit = charts.duration_unit(max(language_seconds.values()))[0]
    assert f"Audio per detected language ({unit})" in titles


def test_segment_length_distribution_in_the_summary() -> None:
    """The kept segments' lengths against what TTS recipes train on: median, 90th percentile,
    and counts per 5 s (a trainer sizes its batches on these)."""
    from services.ops.report.collect import segment_lengths

    got = segment_lengths([2.0, 6.0, 7.0, 12.0, 14.0, 14.5, 18.0, 26.0, 29.0, 31.0])
    assert got["median"] == 14.5 and got["p90"] == 31.0
    assert got["bins"] == {"0-5": 1, "5-10": 2, "10-15": 3, "15-20": 1, "20-25": 0,
                           "25-30": 2, "30+": 1}
    assert segment_lengths([]) == {"median": None, "p90": None, "bins": {}}
