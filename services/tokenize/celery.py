"""The Celery app of the tokenize fleet: ``celery -A services.tokenize worker`` (Celery's ``-A``
finds this module).

Its worker reads the ``tokenize`` queue, is named ``tokenize@host`` and imports its task from
``services.tokenize.tasks`` (``include=``); nothing else of the stage is imported here, nor any
later stage's spec or settings (the app comes from services/pipeline.py).
"""

from services.pipeline import worker_app

app = worker_app("tokenize")  # its settings checked before the worker starts
