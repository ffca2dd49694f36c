"""The tokenize task: one shard per task; the stage's model loads once per worker process, after
the fork (common/queue/worker.py)."""

from common.queue.worker import register_stage_task
from services.stages import PIPELINE
from services.tokenize.celery import app

process_shard = register_stage_task(app, PIPELINE, "tokenize")
