"""Stage enhance: Sidon speech restoration of the kept ASR segments (DESIGN §2, §7).

Importing this package loads Celery and numpy only; torch / transformers load in the worker
process when the model does.
"""

from services.enhance import tasks  # noqa: F401  (registers the task)
from services.enhance.app import app

__all__ = ["app"]
