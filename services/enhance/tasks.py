"""The enhance task: one shard per task; the stage's model loads once per worker process, after
the fork (common/queue/worker.py)."""

from common.queue.worker import register_stage_task
from services.enhance.celery import app
from services.stages import PIPELINE

process_shard = register_stage_task(app, PIPELINE, "enhance")
