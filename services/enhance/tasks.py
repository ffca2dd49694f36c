"""The enhance task: one shard per task; the stage's model loads once per worker process, after
the fork (common/queue/worker.py)."""

from services.enhance.celery import app
from services.pipeline import worker_task

process_shard = worker_task(app, "enhance")
