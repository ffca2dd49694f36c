"""What the enhance stage reads and writes: the raw shard and ASR's kept segments in."""

from common.stages.contract import InputRef
from common.stages.spec import Deploy, StageSpec
from services.enhance.settings import EnhanceSettings

SPEC = StageSpec(
    name="enhance", settings=EnhanceSettings,
    models="services.enhance.fetch:configured",
    stage_class="services.enhance.stage:EnhanceStage",
    output_key=lambda s, i: f"enhanced/{s.shard_stem(i)}.tar",
    inputs=lambda s, i: {"shard": InputRef("input", s.shard_name(i)),
                         "asr": InputRef.of_stage("asr")},
    # the duplicate-detection signature of each segment written (services/dedup/signature.py),
    # read by the corpus step dedup (services/dedup/step.py); the speaker embeddings
    # (services/speakers/embeddings.py), read by the corpus step speakers
    side_outputs=lambda s, i: {"signatures": f"enhanced/{s.shard_stem(i)}.signatures.parquet",
                               "speakers": f"enhanced/{s.shard_stem(i)}.speakers.parquet"},
    deploy=Deploy(extra="enhance", image="nvidia/cuda:12.6.3-runtime-ubuntu24.04",
                  image_why="torch wheels bring their own cuDNN/cuBLAS; the base gives the CUDA "
                            "12 runtime.",
                  gpu_memory="~5 GB/process (Sidon fp32, 16 x 10 s chunks)", metrics_port=9211,
                  apt=("python3-dev", "gcc"),
                  apt_why=(("gcc + python3-dev: resemblyzer (speaker-embedding weights, "
                            "docs/quality.md) depends on"),
                           "webrtcvad, which PyPI ships as source only.")),
    # what a segment goes through, in order (services/enhance/chain.py): the rules on its
    # input, restoration, then behind the model the re-cut at speaker changes, the annotators
    # (services/enhance/quality/steps.py lists them), the sidecar, the signatures (its input
    # still at hand), the speaker labels and the embeddings of the labelled; the writer writes
    # the tar of what comes out. A step whose settings turn it off is left out.
    steps=("services.enhance.early:EarlyFilter", "services.enhance.restore:Restore",
           "services.enhance.recut:Recut", "services.enhance.annotation:Annotate",
           "services.enhance.sidecar:SidecarStep", "services.enhance.sides:Signatures",
           "services.enhance.labels:Labels", "services.enhance.sides:SpeakerEmbeddings"),
    # a long member's buffers on their own mappings, handed back when freed: its peak stays
    # within +250 MB of a short member's only with it (docs/asr.md, "Allocator")
    mmap_threshold_kb=1024,
)
