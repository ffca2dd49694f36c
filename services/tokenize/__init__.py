"""Stage tokenize: NeuCodec 50 Hz tokens per enhanced segment -> JSONL (torch loads lazily)."""

from services.tokenize.app import app
from services.tokenize import tasks  # noqa: F401  (registers the task)

__all__ = ["app"]
