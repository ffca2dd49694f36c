"""Who each filter takes from: the share of segments a filter removed per length class and per
speaker, and a warning where one class or one speaker loses far more than the rest
(docs/quality.md, fairness).

A filter that drops clean speech rarely drops it evenly: short utterances, steady or synthetic
voices, one speaker's microphone. :class:`Fairness` counts every segment seen (kept or not) by
duration bucket and by speaker (the corpus speaker where ``onsei speakers`` named one, else the
voice within its file), and every removal by reason kind. The export card and the report show
the table; :meth:`Fairness.warnings` names the classes that lose at least ``RATIO`` times the
share the rest lose, and ``MIN_GAP`` more, over at least ``MIN_SEGMENTS`` segments.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from services.rules.policy import reason_kind

BUCKETS: tuple[tuple[str, float], ...] = (("< 2 s", 2.0), ("2-5 s", 5.0), ("5-15 s", 15.0),
                                          ("> 15 s", float("inf")))
RATIO = 2.0  # a class losing this many times the rest's share ...
MIN_GAP = 0.10  # ... and at least 10 points more ...
MIN_SEGMENTS = 5  # ... over at least this many of its segments is named
TOP_SPEAKERS = 20  # speakers listed in a table (the warnings look at all)


def bucket(seconds: float) -> str:
    return next(name for name, top in BUCKETS if seconds < top)


@dataclass
class _Class:
    segments: int = 0
    removed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    any_removed: int = 0


@dataclass
class Fairness:
    buckets: dict[str, _Class] = field(default_factory=lambda: defaultdict(_Class))
    speakers: dict[str, _Class] = field(default_factory=lambda: defaultdict(_Class))
    reasons: set[str] = field(default_factory=set)

    def add(self, seconds: float, speaker: str | None, reasons: list[str]) -> None:
        """One segment, kept (``reasons`` empty) or removed for ``reasons``."""
        kinds = list(dict.fromkeys(reason_kind(r) for r in reasons))
        classes = [self.buckets[bucket(seconds)]]
        if speaker:
            classes.append(self.speakers[speaker])
        for c in classes:
            c.segments += 1
            c.any_removed += bool(kinds)
            for k in kinds:
                c.removed[k] += 1
        self.reasons.update(kinds)

    def merge(self, other: Fairness) -> None:
        for mine, theirs in ((self.buckets, other.buckets), (self.speakers, other.speakers)):
            for name, c in theirs.items():
                m = mine[name]
                m.segments += c.segments
                m.any_removed += c.any_removed
                for k, n in c.removed.items():
                    m.removed[k] += n
        self.reasons |= other.reasons

    def _columns(self) -> list[str]:
        return sorted(self.reasons)

    def table(self, by: str) -> tuple[list[str], list[list[str]]]:
        """(headers, rows) of drop shares by ``"length"`` or ``"speaker"``."""
        classes = self._ordered(by)
        cols = self._columns()
        rows = [[name, str(c.segments), _pct(c.any_removed, c.segments),
                 *(_pct(c.removed.get(k, 0), c.segments) for k in cols)]
                for name, c in classes]
        return [by, "segments", "removed (any)", *cols], rows

    def _ordered(self, by: str) -> list[tuple[str, _Class]]:
        if by == "length":
            return [(name, self.buckets[name]) for name, _ in BUCKETS if name in self.buckets]
        top = sorted(self.speakers.items(), key=lambda kv: (-kv[1].segments, kv[0]))
        return top[:TOP_SPEAKERS]

    def warnings(self) -> list[str]:
        """One line per (filter, class) that loses far more than the rest of its kind."""
        out = []
        for label, group in (("segments", self.buckets), ("speaker", self.speakers)):
            total = sum(c.segments for c in group.values())
            for kind in ["any filter", *self._columns()]:
                def lost(c: _Class, kind: str = kind) -> int:
                    return c.any_removed if kind == "any filter" else c.removed.get(kind, 0)

                all_lost = sum(lost(c) for c in group.values())
                for name, c in sorted(group.items()):
                    rest_n = total - c.segments
                    if c.segments < MIN_SEGMENTS or rest_n < MIN_SEGMENTS:
                        continue
                    share = lost(c) / c.segments
                    rest = (all_lost - lost(c)) / rest_n
                    if share >= MIN_GAP + rest and share >= RATIO * rest:
                        what = f"{label} {name}" if label == "segments" else f"speaker {name}"
                        out.append(f"{kind}: {what} lose {100 * share:.0f} % of their "
                                   f"{c.segments} segments, the rest {100 * rest:.0f} %")
        return out


def _pct(n: int, of: int) -> str:
    return f"{100 * n / of:.1f} %" if of else "-"


def markdown(f: Fairness) -> list[str]:
    """The card's section (empty when no segment was counted)."""
    if not f.buckets:
        return []
    from services.ops.export import markdown as md

    out = ["## Who the filters removed", "",
           ("Share of segments each filter removed, by length and by speaker (a filter that "
            "drops clean speech seldom drops it evenly; docs/quality.md, fairness)."), ""]
    for by in ("length", "speaker"):
        headers, rows = f.table(by)
        if rows:
            # a speaker's name is data: a code span, as everywhere on the card
            first = (lambda c: md.code(c, in_table=True)) if by == "speaker" else md.text
            out += [*md.table([md.text(h) for h in headers],
                              [[first(r[0]), *(md.text(c) for c in r[1:])] for r in rows]), ""]
    warned = [f"**Warning**: {md.text(w)}." for w in f.warnings()]
    return out + (warned + [""] if warned else [])


def card_section(parts: list[Fairness]) -> list[str]:
    """The card's section from each shard's counts, with the filters the defaults leave off."""
    from services.rules.policy import MISSES_GOAL, OFF_BY_DEFAULT

    f = Fairness()
    for p in parts:
        f.merge(p)
    off = [f"- `{k}` is off by default: {why}." for k, why in OFF_BY_DEFAULT.items()]
    if off:
        off = ["Filters off by default (they removed clean speech; docs/quality.md, filters):",
               "", *off, ""]
    miss = [f"- `{k}`: {why}." for k, why in MISSES_GOAL.items()]
    if miss:
        miss = [("Drops on by default that miss the goal (at most 1 % of clean recorded "
                 "segments, 5 % of synthetic ones; docs/quality.md, filters):"), "", *miss, ""]
    return [*markdown(f), *off, *miss]


def html(f: Fairness) -> str:
    """The report's section, every string escaped."""
    from html import escape

    if not f.buckets:
        return "<p>no filtered segment counted</p>"
    parts = []
    for by in ("length", "speaker"):
        headers, rows = f.table(by)
        if not rows:
            continue
        head = "".join(f"<th>{escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>"
                       for r in rows)
        parts.append(f'<table class="fairness" data-by="{by}"><tr>{head}</tr>{body}</table>')
    parts += [f'<p class="bad warning">{escape(w)}</p>' for w in f.warnings()]
    return "".join(parts) + limits_html()


def limits_html() -> str:
    """The filters off by default and the drops on by default that miss the clean-speech goal,
    as the card names them."""
    from html import escape

    from services.rules.policy import MISSES_GOAL, OFF_BY_DEFAULT

    items = [f"<li><code>{escape(k)}</code> is off by default: {escape(why)}</li>"
             for k, why in OFF_BY_DEFAULT.items()]
    items += [f"<li><code>{escape(k)}</code> is on and misses the goal: {escape(why)}</li>"
              for k, why in MISSES_GOAL.items()]
    return f'<ul class="limits">{"".join(items)}</ul>' if items else ""
