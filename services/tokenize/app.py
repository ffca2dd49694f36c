"""The tokenize stage's Celery app: ``celery -A services.tokenize worker -Q tokenize``."""

from common.queue import make_app

app = make_app("services.tokenize")
