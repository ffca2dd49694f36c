"""The errors a user can fix, as one line each instead of a traceback (``Error: ...``).

Invalid settings (one line per setting, named ``ONSEI_X``), an unreadable ``ONSEI_CONFIG``, a
failed preflight check (common/stages/preflight.py) and a storage error (no credentials, no
bucket)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import click
from pydantic import ValidationError

from common.settings import ConfigError, describe_errors
from common.stages.preflight import PreflightError
from common.storage import StorageError

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except ValidationError as e:
        raise click.ClickException(describe_errors(e)) from None
    except (ConfigError, PreflightError, StorageError) as e:
        raise click.ClickException(str(e)) from None


def friendly(fn: F) -> F:
    """Decorate a click command's function: its fixable errors become one-line messages."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with user_errors():
            return fn(*args, **kwargs)

    return cast(F, wrapper)  # functools.wraps keeps the signature
