#!/usr/bin/env bash
# Sidon-sized restoration on one GPU (H200), within 10 minutes, before the weights are at hand:
# real-time factor of batched 10 s chunks (B = 8..64) through modules of Sidon's real sizes
# with random weights (w2v-BERT 2.0 encoder + ~50 M-parameter decoder), loaded through onsei's
# own Sidon loader, then the whole enhance engine on a 1-30 s mix. JSON lines on stdout (and in
# $OUT/gpu_enhance.jsonl when OUT is set). Extra arguments go to bench/gpu_enhance.py.
#   bash bench/gpu_enhance.sh                  # on the GPU node
#   bash bench/gpu_enhance.sh --device cpu --tiny --batches 2,4 --iters 1 --e2e-seconds 60   # dry run
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-8}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
# 570 s hard stop; the script itself stops starting new work after --budget (480 s).
exec timeout 570 python -m bench.gpu_enhance "$@"
