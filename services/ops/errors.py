"""The errors a user can fix, as one line each instead of a traceback (``Error: ...``).

Invalid settings (one line per setting, named ``ONSEI_X``), an unreadable ``ONSEI_CONFIG``, a
failed preflight check (common/stages/preflight.py) and a storage error (no credentials, no
bucket)."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import click
from pydantic import ValidationError

from common.errors import ConfigError
from common.settings import describe_errors
from common.stages.preflight import PreflightError
from common.storage import StorageError

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def user_errors(verbose: bool | None = None) -> Iterator[None]:
    """Any other error is one line too, its secrets masked; its traceback (masked the same
    way) is printed only when ``verbose`` (``onsei -v``): a traceback quotes values, and a value
    may hold a password. ``verbose`` None: the command has no such flag."""
    try:
        yield
    except ValidationError as e:
        raise click.ClickException(masked(describe_errors(e))) from None
    except (ConfigError, PreflightError, StorageError) as e:
        raise click.ClickException(masked(str(e))) from None
    except click.ClickException as e:  # a command's own message may quote a URL it was given
        # click declares ``message`` Final; rewritten in place, the exception keeps its class
        # (a UsageError its usage line and exit code 2)
        e.message = masked(e.message)  # type: ignore[misc]
        raise
    except (click.exceptions.Exit, click.Abort):
        raise
    except Exception as e:  # noqa: BLE001 - a bug or an unforeseen input: masked, one line
        raise unexpected(e, verbose) from None


def current_secrets() -> list[str]:
    """The secret settings' strings as the environment and ONSEI_CONFIG give them now."""
    from common.redact import settings_secrets
    from common.settings import Settings

    try:
        return settings_secrets(Settings())
    except Exception:  # noqa: BLE001 - settings that do not load: the patterns still mask
        return []


def masked(text: str) -> str:
    """``text`` with its URL passwords and the settings' secrets masked: every message goes
    out through here."""
    from common.display import visible
    from common.redact import redact_text

    # a message's own lines stay lines; a control character it quotes is shown, not obeyed
    return "\n".join(visible(x) for x in redact_text(text, current_secrets()).split("\n"))


def unexpected(e: BaseException, verbose: bool | None) -> click.ClickException:
    from common.display import visible
    from common.redact import redact_text

    secrets = current_secrets()
    if verbose:
        tb = "".join(traceback.format_exception(e))
        click.echo("\n".join(visible(x) for x in redact_text(tb, secrets).split("\n")), err=True)
    hint = " (`onsei -v` prints the traceback)" if verbose is False else ""
    return click.ClickException(visible(redact_text(f"{type(e).__name__}: {e}", secrets))[:2000]
                                + hint)


def friendly(fn: F) -> F:
    """Decorate a click command's function: its fixable errors become one-line messages."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with user_errors():
            return fn(*args, **kwargs)

    return cast(F, wrapper)  # functools.wraps keeps the signature
