"""The Grafana dashboard reads only metrics the workers (common/queue/metrics.py) or Flower
export."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REPO = Path(__file__).resolve().parents[2]


def _exported() -> set[str]:
    """Sample names common/queue/metrics.py defines, rebuilt on a private registry."""
    reg = CollectorRegistry()
    names: set[str] = set()
    text = (REPO / "common/queue/metrics.py").read_text()
    for kind, name in re.findall(r"(Counter|Gauge|Histogram)\(\"(onsei_\w+)\"", text):
        metric = {"Counter": Counter, "Gauge": Gauge, "Histogram": Histogram}[kind](
            name, "doc", ["stage", "host"], registry=reg)
        metric.labels("asr", "h")
    for fam in reg.collect():
        names |= {s.name for s in fam.samples}
    return names


def test_dashboard_queries_known_metrics() -> None:
    dash = json.loads((REPO / "deploy/grafana/onsei.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    panels = dash["panels"]
    assert len(panels) >= 8 and len({p["id"] for p in panels}) == len(panels)
    known = _exported()
    used = {n for e in exprs for n in re.findall(r"\b(onsei_\w+)", e)}
    assert used and used <= known, used - known
    assert any("flower_" in e for e in exprs)
    for e in exprs:
        assert e.count("(") == e.count(")"), e
