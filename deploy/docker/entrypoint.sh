#!/bin/sh
# onsei worker entrypoint. With ONSEI_CUDA_MPS=1 it starts the CUDA MPS control daemon first, so
# the worker's processes (celery --concurrency=N) run kernels on one GPU's SMs at the same time
# instead of time-slicing it. Then it runs the command under onsei-supervise, which restarts a
# worker that dies (issue 12: kombu could kill it on a Redis outage) and forwards SIGTERM to it
# (graceful preemption: see common/queue/preemption.py). ONSEI_RESTART=0: exec the command once.
set -eu

if [ "${ONSEI_CUDA_MPS:-0}" = "1" ]; then
    export CUDA_MPS_PIPE_DIRECTORY="${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}"
    export CUDA_MPS_LOG_DIRECTORY="${CUDA_MPS_LOG_DIRECTORY:-/tmp/nvidia-mps-log}"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
        echo "onsei: ONSEI_CUDA_MPS=1 but nvidia-cuda-mps-control is absent" \
             "(NVIDIA_DRIVER_CAPABILITIES must include compute)" >&2
        exit 78
    fi
    if [ -S "$CUDA_MPS_PIPE_DIRECTORY/control" ] && echo get_server_list \
            | nvidia-cuda-mps-control >/dev/null 2>&1; then
        echo "onsei: CUDA MPS daemon already running ($CUDA_MPS_PIPE_DIRECTORY)" >&2
    else
        nvidia-cuda-mps-control -d
        echo "onsei: CUDA MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)" >&2
    fi
    # Optional cap of each client's share of SMs (e.g. 50 with two processes per GPU).
    if [ -n "${ONSEI_MPS_ACTIVE_THREAD_PERCENTAGE:-}" ]; then
        export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$ONSEI_MPS_ACTIVE_THREAD_PERCENTAGE"
    fi
fi

exec sh "$(dirname "$0")/onsei-supervise" "$@"
