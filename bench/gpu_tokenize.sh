#!/usr/bin/env bash
# NeuCodec encoding on one GPU (H200), within 10 minutes, before the weights are at hand:
# real-time factor of our batched encoder (policies exact, stitched, padded) at B = 1..64 on 10 s
# segments, and the library's encode_code at B=1, with the full-size architecture and random
# weights (same compute as the released model). JSON lines on stdout and $OUT/gpu_tokenize.jsonl.
#
# The GPU machine has torch/transformers/torchaudio but not neucodec: carry wheels in .whl/
# (ignored by git), fetched here with, e.g.:
#   pip download --no-deps -d .whl neucodec==0.0.6 vector-quantize-pytorch==1.17.8 \
#     local-attention==1.11.2 hyper-connections==0.4.11 torch-einops-utils einops einx \
#     frozendict torchtune==0.6.1 torchao==0.17.0 omegaconf antlr4-python3-runtime soxr
# and run with carry [".whl"]. Extra arguments go to bench/gpu_tokenize.py.
#   bash bench/gpu_tokenize.sh                                        # on the GPU node
#   bash bench/gpu_tokenize.sh --device cpu --tiny --batches 1,2 --iters 1 --seconds 1  # dry run
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-8}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if ! python -c "import neucodec" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python -c "import torch, neucodec; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
# 570 s hard stop; the script itself starts no new measurement after --budget (480 s).
exec timeout 570 python -m bench.gpu_tokenize "$@"
