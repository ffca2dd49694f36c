"""Is the Hugging Face hub usable from here? Asked before any download, so an offline node
fails at once with a clear message instead of after huggingface_hub's minute of retries."""

from __future__ import annotations

import os
import socket
from functools import lru_cache
from urllib.parse import urlparse

_TRUE = ("1", "true", "yes", "on")


def hub_offline_flag() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


@lru_cache(maxsize=1)
def _probe(endpoint: str, timeout: float) -> str | None:
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return f"cannot reach {host}:{port} ({e.strerror or type(e).__name__})"


def hub_unavailable(timeout: float = 3.0) -> str | None:
    """``None`` when the hub can be tried; else why not (offline flag, or no connection)."""
    if hub_offline_flag():
        return "HF_HUB_OFFLINE is set"
    return _probe(os.environ.get("HF_ENDPOINT", "https://huggingface.co"), timeout)
