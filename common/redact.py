"""Hide secrets before anything is printed, logged or written to a record."""

from __future__ import annotations

import logging
import re
from typing import Any

# scheme://user:password@host -> scheme://user:***@host. The password runs to the last "@" of
# its whitespace-free run, as the broker reads it (``redis://:p@ss@host``: "p@ss").
_URL_PASSWORD = re.compile(r"(?P<pre>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<pw>\S+)(?P<at>@)")
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
_KEY_VALUE = re.compile(
    r"(?i)(?P<k>(aws_secret_access_key|secret|password|passwd|token|api_key)[\"']?\s*[=:]\s*[\"']?)"
    r"(?P<v>[^\s\"',;&]+)"
)
MIN_LITERAL = 4  # shorter secrets are masked only where their form shows them (``:***@``)


def split_userinfo(url: str) -> tuple[str, str, str] | None:
    """``(scheme://, userinfo, rest)`` of a URL with credentials, else None. The userinfo ends
    at the last ``@`` (urllib, redis-py and kombu read ``redis://:p@ss@host`` as password
    ``p@ss``); a ``/`` in it is kept in it, so a password the broker cannot parse is masked
    whole all the same."""
    m = _SCHEME.match(url)
    if m is None or "@" not in url[m.end():]:
        return None
    userinfo, _, rest = url[m.end():].rpartition("@")
    return m.group(), userinfo, rest


def redact_url(url: str) -> str:
    """``url`` with its password masked, parsed as the broker parses it (each ``;``-separated
    URL of a failover list on its own). A userinfo without ``:`` is masked whole: a lone
    ``redis://secret@host`` is a password to most brokers."""
    out = []
    for part in url.split(";"):
        parts = split_userinfo(part)
        if parts is None:
            out.append(part)
            continue
        scheme, userinfo, rest = parts
        user, colon, _ = userinfo.partition(":")
        out.append(f"{scheme}{user}:***@{rest}" if colon else f"{scheme}***@{rest}")
    return ";".join(out)


def secret_literals(value: str) -> list[str]:
    """The strings of a secret setting that must never be printed, longest first: the value,
    its userinfo and password (also percent-decoded) or, without a URL, its ``user:password``
    password; those shorter than ``MIN_LITERAL`` are left to the patterns."""
    from urllib.parse import unquote

    found: set[str] = {value}
    for part in value.split(";"):
        parts = split_userinfo(part)
        if parts is not None:
            userinfo = parts[1]
            found.update({userinfo, userinfo.partition(":")[2] or userinfo})
        elif "://" not in part and ":" in part:
            found.add(part.partition(":")[2])
    found |= {unquote(x) for x in found}
    return sorted((x for x in found if len(x) >= MIN_LITERAL), key=len, reverse=True)


def url_passwords(value: str) -> list[str]:
    """The passwords (a userinfo without ``:``: the whole of it) of the URLs in ``value``,
    also percent-decoded, those shorter than ``MIN_LITERAL`` left out. A library quotes them
    away from their URL (boto3: ``Invalid bucket name "key:secret@bucket"``), where no
    pattern finds them."""
    from urllib.parse import unquote

    found: set[str] = set()
    for part in value.split(";"):
        parts = split_userinfo(part)
        if parts is not None:
            user, colon, password = parts[1].partition(":")
            found.add(password if colon else user)
    found |= {unquote(x) for x in found}
    return [x for x in found if len(x) >= MIN_LITERAL]


def settings_secrets(settings: Any) -> list[str]:
    """:func:`secret_literals` of every ``SecretStr`` field of a settings object, and the
    passwords of the URLs its other text fields hold (:func:`url_passwords`)."""
    from pydantic import SecretStr

    found: list[str] = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr) and value.get_secret_value():
            found += secret_literals(value.get_secret_value())
        elif isinstance(value, str):
            found += url_passwords(value)
    return sorted(set(found), key=len, reverse=True)


def broker_url_problem(url: str) -> str | None:
    """Why the broker could not parse ``url`` (never quoting it: it may hold a password), or
    None. redis-py and kombu end the host part at the first ``/``, ``?`` or ``#``: a password
    holding one is read as a host and a port, and fails later with its first characters in the
    message."""
    from urllib.parse import urlsplit

    for one in url.split(";"):  # a failover list: each URL on its own, as kombu reads it
        parts = split_userinfo(one)
        if parts is not None and any(c in parts[1] for c in "/?#"):
            return ("the user or password holds '/', '?' or '#', which the broker reads as the "
                    "end of the host: percent-encode them (%2F, %3F, %23)")
        try:
            urlsplit(one).port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            return "its port is not a number (a ':' after the host must be followed by digits)"
    return None


def redact_text(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """Mask URL passwords and key=value secrets in free text (error messages, logs), and every
    string of ``secrets`` (:func:`secret_literals` of the secret settings) wherever it is."""
    for literal in secrets:
        text = text.replace(literal, "***")
    text = _URL_PASSWORD.sub(lambda m: f"{m['pre']}***{m['at']}", text)
    return _KEY_VALUE.sub(lambda m: f"{m['k']}***", text)


def redact_value(value: Any, secret: bool = False) -> Any:
    if isinstance(value, str):
        if secret:
            if "://" in value:
                return redact_url(value)
            return "***" if value else value
        return redact_text(value)
    return value


class RedactingFilter(logging.Filter):
    """A handler filter: masks secrets in every formatted message and traceback it passes
    (``secrets``: literal strings masked too, see :func:`redact_text`)."""

    def __init__(self, secrets: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except (TypeError, ValueError, KeyError):  # a broken format: the formatter reports it
            return True
        clean = redact_text(msg, self.secrets)
        if clean != msg:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text, self.secrets)
        return True


def install_log_redaction(logger: logging.Logger | None = None,
                          secrets: tuple[str, ...] | list[str] = ()) -> None:
    """Add :class:`RedactingFilter` to every handler of ``logger`` (default: root); idempotent
    (a filter already there gets ``secrets`` added)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        mine = [f for f in handler.filters if isinstance(f, RedactingFilter)]
        if not mine:
            handler.addFilter(RedactingFilter(secrets))
        for f in mine:
            f.secrets = tuple(dict.fromkeys((*f.secrets, *secrets)))


def _on_celery_logging(logger: logging.Logger | None = None, **_: Any) -> None:
    from celery import current_app

    # the worker's app carries its settings (common.queue.config.make_app): mask their secrets
    settings = getattr(current_app, "onsei_settings", None)
    install_log_redaction(logger, settings_secrets(settings) if settings is not None else ())


try:  # Celery workers: redact whatever their log handlers print (imported by common.queue.worker).
    from celery.signals import after_setup_logger, after_setup_task_logger

    after_setup_logger.connect(_on_celery_logging, weak=False)
    after_setup_task_logger.connect(_on_celery_logging, weak=False)
except ImportError:  # pragma: no cover - celery is a core dependency
    pass
