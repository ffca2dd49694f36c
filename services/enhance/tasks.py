"""The enhance task (model loaded once per worker process, after the fork)."""

from common.worker import register_stage_task
from services.enhance.app import app
from services.enhance.stage import EnhanceStage

process_shard = register_stage_task(app, "enhance", EnhanceStage)
