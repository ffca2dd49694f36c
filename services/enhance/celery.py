"""The Celery app of the enhance fleet: ``celery -A services.enhance worker`` (Celery's ``-A`` finds
this module).

Its worker reads the ``enhance`` queue, is named ``enhance@host`` and imports its task from
``services.enhance.tasks`` (``include=``); nothing else of the stage is imported here, nor any
later stage's spec or settings (the app comes from services/pipeline.py).
"""

from services.pipeline import worker_app

app = worker_app("enhance")  # its settings checked before the worker starts
