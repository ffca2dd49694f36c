"""Hide secrets before anything is printed, logged or written to a record."""

from __future__ import annotations

import logging
import re
from typing import Any

# scheme://user:password@host -> scheme://user:***@host
_URL_PASSWORD = re.compile(r"(?P<pre>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<pw>[^@\s]+)(?P<at>@)")
_KEY_VALUE = re.compile(
    r"(?i)(?P<k>(aws_secret_access_key|secret|password|passwd|token|api_key)[\"']?\s*[=:]\s*[\"']?)"
    r"(?P<v>[^\s\"',;&]+)"
)


def redact_text(text: str) -> str:
    """Mask URL passwords and key=value secrets in free text (error messages, logs)."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['pre']}***{m['at']}", text)
    return _KEY_VALUE.sub(lambda m: f"{m['k']}***", text)


def redact_value(value: Any, secret: bool = False) -> Any:
    if isinstance(value, str):
        if secret and "://" not in value:
            return "***" if value else value
        if secret and ":" in value and "@" not in value and "://" not in value:
            return "***"
        return redact_text(value)
    return value


class RedactingFilter(logging.Filter):
    """A handler filter: masks secrets in every formatted message and traceback it passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except (TypeError, ValueError, KeyError):  # a broken format: the formatter reports it
            return True
        clean = redact_text(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Add :class:`RedactingFilter` to every handler of ``logger`` (default: root); idempotent."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def _on_celery_logging(logger: logging.Logger | None = None, **_: Any) -> None:
    install_log_redaction(logger)


try:  # Celery workers: redact whatever their log handlers print (imported by common.queue.worker).
    from celery.signals import after_setup_logger, after_setup_task_logger

    after_setup_logger.connect(_on_celery_logging, weak=False)
    after_setup_task_logger.connect(_on_celery_logging, weak=False)
except ImportError:  # pragma: no cover - celery is a core dependency
    pass
