"""The tokenize task: one shard of enhanced segments -> one JSONL of NeuCodec tokens."""

from common.worker import register_stage_task
from services.tokenize.app import app
from services.tokenize.stage import TokenizeStage

process_shard = register_stage_task(app, "tokenize", TokenizeStage)
