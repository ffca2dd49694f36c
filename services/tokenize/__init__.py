"""Stage tokenize: NeuCodec 50 Hz tokens per enhanced segment -> JSONL (torch loads lazily)."""

from services.tokenize import tasks  # noqa: F401  (registers the task)
from services.tokenize.app import app

__all__ = ["app"]
