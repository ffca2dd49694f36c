"""What the ASR stage reads and writes (the pipeline order: services/pipeline.py)."""

from common.node.allocator import ONE_HEAP
from common.stages.contract import InputRef
from common.stages.spec import Deploy, StageSpec
from services.asr.settings import AsrSettings

SPEC = StageSpec(
    name="asr", settings=AsrSettings,
    models="services.asr.fetch:configured",
    stage_class="services.asr.stage:AsrStage",
    output_key=lambda s, i: f"asr/{s.shard_stem(i)}.jsonl",
    inputs=lambda s, i: {"shard": InputRef("input", s.shard_name(i))},
    # each input key's source and licence from its metadata (services/provenance/table.py)
    side_outputs=lambda s, i: {"provenance": f"provenance/{s.shard_stem(i)}.jsonl"},
    deploy=Deploy(extra="asr", image="nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04",
                  image_why="CTranslate2 4.x needs the CUDA 12 runtime + cuDNN 9 from the base "
                            "image.",
                  gpu_memory="~3 GB/process (large-v3-turbo fp16, batch 16)", metrics_port=9201),
    # the encoder's 72 MB attention buffers come back from one heap without page faults, a
    # third less encoder CPU at the same peak (docs/asr.md, "Choosing decoding and the
    # allocator")
    mmap_threshold_kb=ONE_HEAP,
)
