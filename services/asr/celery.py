"""The Celery app of the ASR fleet: ``celery -A services.asr worker`` (Celery's ``-A`` finds this
module).

Its worker reads the ``asr`` queue, is named ``asr@host`` and imports its task from
``services.asr.tasks`` (``include=``); nothing else of the stage is imported here, nor any
later stage's spec or settings (the app comes from services/pipeline.py).
"""

from services.pipeline import worker_app

app = worker_app("asr")  # its settings checked before the worker starts
