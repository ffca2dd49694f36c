"""The Celery app of the ASR fleet: ``celery -A services.asr worker -Q asr``."""

from common.queue import make_app

app = make_app("services.asr")
