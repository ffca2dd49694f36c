"""The Celery app of the tokenize fleet: ``celery -A services.tokenize worker`` (Celery's ``-A``
finds this module).

Its worker reads the ``tokenize`` queue, is named ``tokenize@host`` and imports its task from
``services.tokenize.tasks`` (``include=``); nothing else of the stage is imported here.
"""

from services.stages import boot_settings, make_app

app = make_app("services.tokenize", boot_settings())  # checked before the worker starts
