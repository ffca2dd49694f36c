"""The tokenize task: one shard per task; the stage's model loads once per worker process, after
the fork (common/queue/worker.py)."""

from services.pipeline import worker_task
from services.tokenize.celery import app

process_shard = worker_task(app, "tokenize")
