"""Hide secrets before anything is printed, logged or written to a record."""

from __future__ import annotations

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
