"""What the ASR stage reads and writes (the pipeline order: services/pipeline.py)."""

from common.stages.contract import InputRef
from common.stages.spec import StageSpec
from services.asr.settings import AsrSettings

SPEC = StageSpec(
    name="asr", settings=AsrSettings,
    models="services.asr.fetch:configured",
    stage_class="services.asr.stage:AsrStage",
    output_key=lambda s, i: f"asr/{s.shard_stem(i)}.jsonl",
    inputs=lambda s, i: {"shard": InputRef("input", s.shard_name(i))},
)
