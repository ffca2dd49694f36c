"""The enhance task: one shard per task; the stage's model loads once per worker process, after
the fork (common/worker.py)."""

from common.worker import register_stage_task
from services.enhance.celery import app
from services.pipeline import PIPELINE

process_shard = register_stage_task(app, PIPELINE, "enhance")
