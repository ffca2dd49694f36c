"""The card's "Origin and licences" section: hours by licence and by source of what was
written, what the licence policy removed, the attributions the written lines' licences require,
the takedowns applied and the test sets scrubbed.

The hours are read back from the part files written (each line's ``origin``, ``licence`` and
``duration_seconds``), so they count what is in the export after every cap and split, whatever
form the lines were staged in. A key is found by its exact JSON spelling: inside a JSON string
every quote is escaped, so ``"licence":`` can only be the key.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from services.ops.export import markdown as md
from services.ops.export.source import ShardRead
from services.ops.provenance.screen import LICENCE, TAKEDOWN, TEST_SET, Screen
from services.provenance.record import UNKNOWN, spdx

TOP_SOURCES = 20
_DECODER = json.JSONDecoder()


def needs_attribution(licence: str) -> bool:
    """Licences whose terms require crediting the source (Creative Commons BY family, the
    ODC attribution licences)."""
    up = licence.upper()
    return up.startswith("CC-BY") or up in ("ODC-BY-1.0", "ODBL-1.0")


def _field(raw: str, name: str) -> object:
    # from the end: these keys follow the codes (thousands of numbers) in a line
    at = raw.rfind(f'"{name}":')
    if at < 0:
        return None
    try:
        return _DECODER.raw_decode(raw, at + len(name) + 3)[0]
    except ValueError:
        return None


@dataclass
class Tally:
    licence_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    licence_lines: Counter[str] = field(default_factory=Counter)
    source_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    source_lines: Counter[str] = field(default_factory=Counter)
    source_licence: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_parts(cls, root: Path, files: Iterable[str]) -> Tally:
        t = cls()
        for name in files:
            with open(root / name, encoding="utf-8") as f:
                for raw in f:
                    seconds = _field(raw, "duration_seconds")
                    s = float(seconds) if isinstance(seconds, (int, float)) else 0.0
                    lic = _field(raw, "licence")
                    src = _field(raw, "origin")
                    lic = lic if isinstance(lic, str) else UNKNOWN
                    src = src if isinstance(src, str) else UNKNOWN
                    t.licence_seconds[lic] += s
                    t.licence_lines[lic] += 1
                    t.source_seconds[src] += s
                    t.source_lines[src] += 1
                    t.source_licence.setdefault(src, lic)
        return t


def _removed(reads: list[ShardRead], prefix: str) -> dict[str, tuple[int, float]]:
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in reads:
        if r.error is not None:
            continue
        for kind, n in r.removed.items():
            if kind.startswith(prefix):
                out[kind[len(prefix):]][0] += n
                out[kind[len(prefix):]][1] += r.removed_seconds[kind]
    return {k: (int(v[0]), v[1]) for k, v in out.items()}


def _licence_name(lic: str) -> str:
    flag = "" if lic == UNKNOWN or spdx(lic)[1] else " (not an SPDX id: kept as given)"
    return md.code(lic, True) + flag


def section(screen: Screen, root: Path, files: Iterable[str], reads: list[ShardRead]) -> str:
    t = Tally.of_parts(root, files)
    total = sum(t.licence_seconds.values())

    def share(s: float) -> str:
        return f"{100 * s / total:.1f} %" if total else "-"

    # (no "provenance" in the card's words: a card's reader greps it for "nan")
    out = ["", "## Origin and licences", "",
           ("Each line's `origin` (the source URL or id) and `licence` are its input file's, "
            "from the metadata it was packed with; `unknown`: the file "
            "came without them (never guessed)."), "", "### Hours by licence", "",
           *md.table(["licence", "lines", "hours", "share of hours"],
                     [[_licence_name(k), str(t.licence_lines[k]), md.hours(v), share(v)]
                      for k, v in sorted(t.licence_seconds.items(), key=lambda kv: -kv[1])]),
           "", "### Hours by source", ""]
    ranked = sorted(t.source_seconds.items(), key=lambda kv: (-kv[1], kv[0]))
    out += md.table(["source", "licence", "lines", "hours"],
                    [[md.code(k, True), md.code(t.source_licence[k], True),
                      str(t.source_lines[k]), md.hours(v)] for k, v in ranked[:TOP_SOURCES]])
    if len(ranked) > TOP_SOURCES:
        rest = ranked[TOP_SOURCES:]
        out += ["", f"and {len(rest)} more sources: {md.hours(sum(v for _, v in rest))} hours."]
    out += ["", "### Licence policy", ""]
    allowed = screen.options.licences
    removed = _removed(reads, LICENCE)
    if allowed is None:
        out.append("None: every licence kept (`onsei export --licences` keeps only those named).")
    else:
        out += ["Kept only: " + ", ".join(md.code(x) for x in allowed) + ". Removed:", "",
                *md.table(["licence", "segments removed", "hours removed"],
                          [[_licence_name(k), str(n), md.hours(s)]
                           for k, (n, s) in sorted(removed.items())])]
    out += _attribution(screen, t)
    out += _takedowns(screen, reads)
    out += _test_sets(screen, reads)
    return "\n".join(out) + "\n"


def _attribution(screen: Screen, t: Tally) -> list[str]:
    rows = []
    for table in screen.corpus.provenance.values():
        for p in (table or {}).values():
            if t.source_lines.get(p.source) and needs_attribution(p.licence):
                rows.append((p.source, p.owner, p.licence, p.date))
    rows = sorted(set(rows))
    out = ["", "### Attribution", "",
           ("The written lines under a licence that requires credit (CC BY family, ODC-By), "
           "from their metadata:"), ""]
    if not rows:
        return [*out, "(none)"]
    return out + [f"- {md.code(src)}: {md.text(owner)}, {md.code(lic)}"
                  + ("" if date == UNKNOWN else f", {md.text(date)}")
                  for src, owner, lic, date in rows]


def _takedowns(screen: Screen, reads: list[ShardRead]) -> list[str]:
    removed = _removed(reads, TAKEDOWN)
    applied = [r for r in screen.requests]
    out = ["", "### Takedowns", "",
           (f"Takedowns applied: {len(applied)} (every request in `_ledger/takedown/`; a "
           "segment is removed when its source, input key or corpus speaker is named, or it is "
           "a near-duplicate of one that is)."), ""]
    rows = []
    for r in applied:
        n, s = removed.get(r.id, (0, 0.0))
        what = r.value if r.kind != "voice" else (
            f"{r.value} ({len(r.speakers)} corpus speakers at cosine >= {r.threshold})")
        rows.append([md.code(r.id, True), r.kind, md.code(what, True),
                     md.text(r.requested_by), str(n), md.hours(s)])
    return out + md.table(["request", "kind", "what", "requested by", "segments removed",
                           "hours removed"], rows)


def _test_sets(screen: Screen, reads: list[ShardRead]) -> list[str]:
    out = ["", "### Test sets", ""]
    if screen.scrub is None:
        return [*out, "None scrubbed (`onsei export --exclude-test-sets DIR...`)."]
    removed = _removed(reads, TEST_SET)
    rows = []
    for name, utts in sorted(screen.scrub.utterances.items()):
        n, s = removed.get(name, (0, 0.0))
        rows.append([md.code(name, True), str(utts), str(n), md.hours(s),
                     str(screen.how[(name, "audio")]), str(screen.how[(name, "text")])])
    out += md.table(["test set", "utterances", "segments removed", "hours removed",
                     "by audio", "by text"], rows)
    odd = [f"{md.code(name)}: {screen.scrub.unreadable[name]} audio files not decoded (not "
           "matched by audio)" for name in sorted(screen.scrub.unreadable)]
    odd += [f"{md.code(name)}: {screen.scrub.without_text[name]} utterances without a "
            "transcript found (matched by audio only)"
            for name in sorted(screen.scrub.without_text)]
    if odd:
        out += ["", *(f"- {x}" for x in odd)]
    if screen.not_scrubbed:
        out += ["", f"Shards not scrubbed by audio or text (no signature file): "
                f"{len(screen.not_scrubbed)}: "
                + ", ".join(str(i) for i in sorted(screen.not_scrubbed)[:20])]
    return out
