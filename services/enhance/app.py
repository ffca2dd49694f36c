"""Celery app of the enhance stage: ``celery -A services.enhance worker -Q enhance``."""

from common.queue import make_app

app = make_app("services.enhance")
