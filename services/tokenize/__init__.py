"""Stage tokenize: NeuCodec 50 Hz tokens per enhanced segment -> JSONL.

Importing the package imports nothing: torch loads when the model does; the fleet's app is
``services/tokenize/celery.py`` (``celery -A services.tokenize``).
"""
