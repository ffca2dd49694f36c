#!/usr/bin/env bash
# Music separation's cost on ONE GPU (H200) before the weights are at hand: the released
# htdemucs architecture with random weights through the asr stage's own separation path
# (bench/gpu_separation.py). The device has torch and numpy but not demucs and its pure-Python
# needs, nor soxr: `prepare` (here, repo root) downloads them as wheels into .whl/ (~3 MB),
# then one device call carries [".whl"] and runs `run`:
#   bash bench/gpu_separation.sh prepare
#   device: bash bench/gpu_separation.sh run            (carry [".whl"]; ~2 min)
#   dry run here: bash bench/gpu_separation.sh local --device cpu --minutes 1
set -euo pipefail
cd "$(dirname "$0")/.."

prepare() {
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    mkdir -p .whl
    python3 -m pip download -q --no-deps --only-binary=:all: -d .whl demucs==4.1.0 julius \
        einops tqdm
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl soxr
    ls -la .whl
}

case "${1:-run}" in
    prepare) prepare ;;
    run)
        shift || true
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl
        export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
        command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv || true
        timeout 540 python3 -m bench.gpu_separation "$@"
        timeout 120 python3 -m bench.gpu_separation --small --minutes 5 "$@" ;;
    local) shift; PYTHONUNBUFFERED=1 python -m bench.gpu_separation "$@" ;;
    *) echo "usage: $0 prepare | run | local [args]" >&2; exit 2 ;;
esac
