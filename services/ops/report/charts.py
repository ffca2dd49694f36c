"""The report's chart helpers: a matplotlib figure drawn headless and returned as a base64 PNG,
with readable ticks and a "no data" face. matplotlib is imported only when a chart is drawn."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

Draw = Callable[[Any], None]  # draws on a matplotlib Axes


def largest_first(values: Mapping[str, float], n: int | None = None) -> list[tuple[str, float]]:
    """``Counter.most_common`` for figures that are not counts (seconds): largest first, ties
    in insertion order, the first ``n`` when given."""
    return sorted(values.items(), key=itemgetter(1), reverse=True)[:n]


def png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def figure(title: str) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg", force=True)  # headless: never needs a display
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    ax.set_title(title, fontsize=11)
    return fig, ax


def no_data(ax: Any) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color="#999",
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def chart(title: str, draw: Draw | None) -> str:
    """``draw`` on a fresh figure (or "no data" when there is nothing to draw) as PNG base64."""
    fig, ax = figure(title)
    if draw is None:
        no_data(ax)
    else:
        draw(ax)
    return png(fig)


def tidy_ticks(axis: Any) -> None:
    """At most ~5 numeric ticks with short labels (``0.5``, not ``0.0005``-wide strings that
    run together on a narrow axis)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.4g}"))


def duration_unit(max_seconds: float) -> tuple[str, float]:
    """The unit that keeps a chart of durations in readable numbers: hours, minutes or s."""
    if max_seconds >= 3600:
        return "hours", 3600.0
    if max_seconds >= 60:
        return "minutes", 60.0
    return "seconds", 1.0


def barh(title: str, counts: dict[str, float], xlabel: str, color: str = "#4c72b0") -> str:
    items = sorted(counts.items(), key=lambda kv: kv[1])[-15:]

    def draw(ax: Any) -> None:
        ax.barh([k[:40] for k, _ in items], [v for _, v in items], color=color)
        ax.set_xlabel(xlabel)
        ax.tick_params(axis="y", labelsize=8)
        tidy_ticks(ax.xaxis)

    return chart(title, draw if items else None)
