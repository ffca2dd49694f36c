"""The Celery app of the enhance fleet: ``celery -A services.enhance worker`` (Celery's ``-A`` finds
this module).

Its worker reads the ``enhance`` queue, is named ``enhance@host`` and imports its task from
``services.enhance.tasks`` (``include=``); nothing else of the stage is imported here.
"""

from services.stages import boot_settings, make_app

app = make_app("services.enhance", boot_settings())  # checked before the worker starts
