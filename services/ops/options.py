"""Options several ``onsei`` commands share, defined once: the same name, meaning and help
wherever they appear."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def output_option(what: str = "the run's output root") -> Callable[[F], F]:
    """``--output URL`` into the parameter ``output_url`` (None: ``ONSEI_OUTPUT_URL``)."""
    return click.option("--output", "output_url", default=None, metavar="URL",
                        help=f"{what} (default: ONSEI_OUTPUT_URL)")


class OutputOverride(TypedDict, total=False):
    """The settings' keyword arguments ``--output`` sets: ``output_url``, only when given."""

    output_url: str


def output_settings(output_url: str | None) -> OutputOverride:
    """The settings' keyword arguments for ``--output``: none when it was not given."""
    return OutputOverride(output_url=output_url) if output_url else OutputOverride()
