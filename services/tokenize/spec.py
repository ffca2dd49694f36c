"""What the tokenize stage reads and writes. Each tokenizer has its own outputs and ledger, so
a new codec re-runs this stage only, beside the old one's results."""

from common.settings import Settings, section
from common.stages.contract import InputRef
from common.stages.spec import Deploy, StageSpec
from services.tokenize.settings import TokenizeSettings


def _codec(settings: Settings) -> str:
    return section(settings, TokenizeSettings).tokenize_codec


SPEC = StageSpec(
    name="tokenize", settings=TokenizeSettings,
    models="services.tokenize.fetch:configured",
    stage_class="services.tokenize.stage:TokenizeStage",
    output_key=lambda s, i: f"tokens/{_codec(s)}/{s.shard_stem(i)}.jsonl",
    inputs=lambda s, i: {"enhanced": InputRef.of_stage("enhance")},
    ledger_dir=lambda s: f"tokenize/{_codec(s)}",
    deploy=Deploy(extra="tokenize", image="nvidia/cuda:12.6.3-runtime-ubuntu24.04",
                  image_why="torch wheels bring their own cuDNN/cuBLAS; the base gives the CUDA "
                            "12 runtime.",
                  gpu_memory="~4 GB/process (NeuCodec + w2v-BERT 2.0, 240 s/batch)",
                  metrics_port=9221),
)
