#!/usr/bin/env bash
# Quality annotations on one GPU (H200), a few minutes: DNSMOS (torch port) before + after, the
# speaker encoder and Whisper re-transcription, in x real time on the device; compare with
# bench/gpu_enhance.sh's Sidon-sized x real time (docs/quality.md). JSON lines on stdout (and in
# $OUT/gpu_quality.jsonl when OUT is set). Extra arguments go to bench/gpu_quality.py.
#   bash bench/gpu_quality.sh                       # on the GPU node
#   bash bench/gpu_quality.sh --device cpu --tiny   # dry run
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-8}"
export HF_HUB_OFFLINE=1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv || true
exec timeout 570 python -m bench.gpu_quality "$@"
