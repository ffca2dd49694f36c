"""Stage enhance: speech restoration of the kept ASR segments (docs/enhance.md).

Importing the package imports nothing: torch / transformers load in the worker process when the
model does; the fleet's app is ``services/enhance/celery.py`` (``celery -A services.enhance``).
"""
