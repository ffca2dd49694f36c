"""The Celery app of the ASR fleet: ``celery -A services.asr worker`` (Celery's ``-A`` finds this
module).

Its worker reads the ``asr`` queue, is named ``asr@host`` and imports its task from
``services.asr.tasks`` (``include=``); nothing else of the stage is imported here.
"""

from services.stages import boot_settings, make_app

app = make_app("services.asr", boot_settings())  # checked before the worker starts
