"""ReportData -> one self-contained HTML page (charts are matplotlib PNGs inlined as base64).

No external resource of any kind (no script, font or stylesheet link): the file can be mailed,
archived, or opened offline. Every string that came from data is HTML-escaped.
"""

from __future__ import annotations

import time
from collections import Counter
from html import escape
from typing import Any

from common.display import visible
from services.ops.report.charts import barh, chart, duration_unit, tidy_ticks
from services.ops.report.collect import ReportData, segment_lengths
from services.ops.report.quality import charts as quality_charts
from services.ops.report.target import GENERATOR
from services.ops.report.trainers import charts as trainer_charts

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{margin-bottom:.2em}.meta{color:#666;margin-top:0}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.charts figure{margin:0;border:1px solid #eee;padding:6px}
figcaption{font-size:13px;color:#555;text-align:center}
.bad{color:#b00020}
"""


def chart_hours(data: ReportData) -> str:
    labels = ["asr in", "asr kept", "enhance out", "tokens out"]
    values = [data.seconds_asr_in or data.stages["asr"].seconds_in, data.seconds_kept,
              data.stages["enhance"].seconds_out,
              data.token_seconds or data.stages["tokenize"].seconds_out]
    unit, per = duration_unit(max(values))
    amounts = [v / per for v in values]

    def draw(ax: Any) -> None:
        bars = ax.bar(labels, amounts, color=["#4c72b0", "#55a868", "#c44e52", "#8172b2"])
        ax.bar_label(bars, labels=[f"{h:.3g}" for h in amounts], fontsize=8)
        ax.set_ylabel(unit)
        tidy_ticks(ax.yaxis)

    return chart(f"Audio {unit} through the pipeline", draw)


def chart_languages(data: ReportData) -> str:
    seconds = dict(data.language_seconds)
    if not any(seconds.values()):
        return barh("Files per detected language", dict(data.languages), "files", "#dd8452")
    unit, per = duration_unit(max(seconds.values()))
    return barh(f"Audio per detected language ({unit})",
                 {k: v / per for k, v in seconds.items()}, unit, "#dd8452")


def chart_segment_languages(data: ReportData) -> str:
    """Kept speech per segment language: a file's line names one language, its segments
    each their own."""
    seconds = dict(data.segment_language_seconds)
    unit, per = duration_unit(max(seconds.values(), default=0.0))
    return barh(f"Kept segments per segment language ({unit})",
                {k: v / per for k, v in seconds.items()}, unit, "#55a868")


def chart_durations(data: ReportData) -> str:
    lengths = segment_lengths(data.segment_durations)

    def draw(ax: Any) -> None:
        top = max(30.0, max(data.segment_durations))
        ax.hist(data.segment_durations, bins=[x / 2 for x in range(int(2 * top) + 2)],
                color="#55a868")
        for key, style in (("median", "-"), ("p90", "--")):
            ax.axvline(lengths[key], color="#333333", linestyle=style, label=f"{key} "
                       f"{lengths[key]:.1f} s")
        ax.legend()
        ax.set_xlabel("seconds")
        ax.set_ylabel("segments")
        tidy_ticks(ax.xaxis)

    title = f"Kept segment durations (n={len(data.segment_durations)}"
    if lengths["median"] is not None:
        title += f", median {lengths['median']:.1f} s, 90% under {lengths['p90']:.1f} s"
    return chart(title + ")", draw if data.segment_durations else None)


def chart_reasons(data: ReportData) -> str:
    merged: Counter[str] = Counter()
    for k, v in data.drop_reasons.items():
        merged[f"file dropped: {k}"] += v
    for k, v in data.error_reasons.items():
        merged[f"file error: {k}"] += v
    for k, v in data.segment_reasons.items():
        merged[f"segment: {k}"] += v
    return barh("Drop and error reasons", dict(merged), "count", "#c44e52")


def chart_throughput(data: ReportData) -> str:
    names = [s for s, st in data.stages.items() if st.done]

    def draw(ax: Any) -> None:
        rtf = [data.stages[s].realtime_factor for s in names]
        bars = ax.bar(names, rtf, color="#8172b2")
        ax.bar_label(bars, labels=[f"{v:.3g}x" for v in rtf], fontsize=8)
        ax.set_ylabel("x real time (one worker)")
        tidy_ticks(ax.yaxis)

    return chart("Per-stage speed (audio s per shard wall s)", draw if names else None)


def chart_walltimes(data: ReportData) -> str:
    names = [s for s, st in data.stages.items() if st.wall_times]

    def draw(ax: Any) -> None:
        ax.boxplot([data.stages[s].wall_times for s in names], showfliers=True)
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.set_ylabel("seconds per shard")
        tidy_ticks(ax.yaxis)

    return chart("Shard wall times per stage", draw if names else None)


def _table(headers: list[str], rows: list[list[object]], left: int = 1) -> str:
    def cell(tag: str, i: int, v: object) -> str:
        cls = ' class="l"' if i < left else ""
        text = f"{v:.3g}" if isinstance(v, float) else str(v)
        return f"<{tag}{cls}>{escape(visible(text))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cost_table(block: dict[str, Any]) -> str:
    if not block:
        return "<p>no done records</p>"
    rows: list[list[object]] = [
        [s, c["gpu_hours"], c["cost"] if c["cost"] is not None else "?",
         c["cost_per_output_hour"] if c["cost_per_output_hour"] is not None else "?",
         c["node_seconds_per_shard"] or 0.0, ", ".join(c["node_types"])]
        for s, c in block["stages"].items()]
    t = block["total"]
    rows.append(["total", t["gpu_hours"], t["cost"] if t["cost"] is not None else "?",
                 t["cost_per_output_hour"] if t["cost_per_output_hour"] is not None else "?",
                 "", f"{t['output_hours']:.3g} output hours"])
    html = _table(["stage", "GPU-hours", "cost $", "$ per output hour", "node s per shard",
                   "nodes"], rows)
    p = block.get("projection")
    if p:
        hl = "?" if p["hours_left"] is None else f"{p['hours_left']:.3g} h"
        cf = "?" if p["cost_to_finish"] is None else f"${p['cost_to_finish']:,.2f}"
        html += (f'<p id="projection">To finish {p["total_shards"]} shards: {escape(hl)} at '
                 f"the current rate, {escape(cf)} more.</p>")
    return html


def render_html(data: ReportData, filters: str = "") -> str:
    """``filters``: the section that shows who the filters removed and plays samples
    (listen.py), HTML already escaped."""
    charts = [
        ("hours", "Hours in / kept / out", chart_hours(data)),
        ("languages", "Language distribution", chart_languages(data)),
        ("segment_languages", "Languages per segment", chart_segment_languages(data)),
        ("durations", "Segment duration histogram", chart_durations(data)),
        ("reasons", "Drop and error reasons", chart_reasons(data)),
        ("throughput", "Per-stage throughput", chart_throughput(data)),
        ("walltimes", "Shard wall times", chart_walltimes(data)),
    ]
    charts += quality_charts(data.quality)
    charts += trainer_charts(data.trainers)
    figs = "".join(
        f'<figure><img id="chart-{cid}" class="chart" alt="{escape(cap)}" '
        f'src="data:image/png;base64,{b64}"><figcaption>{escape(cap)}</figcaption></figure>'
        for cid, cap, b64 in charts
    )
    stage_rows = [
        [s, st.done, st.failed, st.dead_lettered, st.seconds_in / 3600, st.seconds_out / 3600,
         st.realtime_factor, st.fleet_hours_per_hour, ", ".join(st.models)]
        for s, st in data.stages.items()
    ]
    stages = _table(["stage", "done", "failed", "dead-lettered", "hours in", "hours out",
                     "x real time / worker", "x real time / fleet", "model"], stage_rows)
    slow = _table(["stage", "shard", "wall s", "audio s in", "host"],
                  [[r["stage"], r["shard"], r["wall_seconds"], r["audio_seconds_in"], r["host"]]
                   for r in data.slowest], left=2)
    cost = _cost_table(data.cost)
    failed = _table(["stage", "shard", "attempts", "dead-lettered", "reason"],
                    [[r["stage"], r["shard"], r["attempts"], r["dead_lettered"], r["reason"]]
                     for r in data.failed], left=2) if data.failed else "<p>none</p>"
    unreadable = ("<h2 class=bad>Unreadable outputs</h2><ul>" + "".join(
        f"<li>{escape(visible(u))}</li>" for u in data.unreadable)
                  + "</ul>") if data.unreadable else ""
    from services.ops.report.dedup import html_section

    # each corpus step's progress line; dedup's own figures follow its line
    lines = {c.name: f'<p class="corpus">{escape(c.line())}</p>' for c in data.corpus}
    dedup = lines.pop("dedup", "") + html_section(data.dedup, _table) + "".join(lines.values())
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(data.generated_at))
    kept_pct = 100 * data.seconds_kept / data.seconds_asr_in if data.seconds_asr_in else 0.0
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{GENERATOR}<title>onsei run report</title>
<style>{_CSS}</style></head><body>
<h1>onsei run report</h1>
<p class="meta">{escape(data.output_url)} &middot; tokenizer {escape(data.tokenizer)}
 &middot; generated {escape(when)}</p>
<p id="summary">{data.files} source files, {data.files_ok} kept ({data.seconds_asr_in / 3600:.3g} h
 in, {data.seconds_kept / 3600:.3g} h kept = {kept_pct:.3g}%); {len(data.segment_durations)} kept
 segments; {data.token_lines} tokenized utterances ({data.token_seconds / 3600:.3g} h).</p>
<h2>Stages</h2>{stages}
<h2>Cost</h2>{cost}
<h2>Duplicates</h2>{dedup}
{'<h2 id="filters">Filters: who they removed, and what it sounds like</h2>' + filters
  if filters else ""}
<h2>Charts</h2><div class="charts">{figs}</div>
<h2>Slowest shards</h2>{slow}
<h2>Failed shards</h2>{failed}
{unreadable}
</body></html>
"""
