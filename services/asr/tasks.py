"""The ASR task: one shard per task; the model loads once per worker process, after the fork."""

from common.worker import register_stage_task
from services.asr.app import app
from services.asr.stage import AsrStage

process_shard = register_stage_task(app, "asr", AsrStage)
