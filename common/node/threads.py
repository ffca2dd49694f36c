"""Native thread pools (OpenBLAS, MKL, OpenMP) sized to a worker's share of the node's cores.

Each library sizes its pool to every core of the machine, once per process: a node running
``worker_concurrency`` pool processes, and several stages' workers beside each other, would
start that many pools of one thread per core each, and a pool spins on after a small product
(docs/operations.md, "Feeding the GPU": 7 CPU s per audio hour of enhance on threads no part
metered). The pool process sets them once, before the model loads.
"""

from __future__ import annotations

import logging
import os

from common.settings import Settings

log = logging.getLogger(__name__)


def native_threads(settings: Settings, cores: int | None = None) -> int:
    """Threads each native pool of one pool process may use: the setting, else the node's cores
    shared among the worker's processes (at least one)."""
    if settings.worker_native_threads:
        return settings.worker_native_threads
    return max(1, (cores or os.cpu_count() or 1) // settings.worker_concurrency)


def limit_native_threads(settings: Settings) -> int:
    """Cap every native pool loaded in this process (and those loaded later: the limit is
    applied again by the libraries' own variables) at :func:`native_threads`."""
    from threadpoolctl import threadpool_limits

    n = native_threads(settings)
    # read by a library loaded after this call (torch's OpenMP); a value set outside stays
    os.environ.setdefault("OMP_NUM_THREADS", str(n))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(n))
    os.environ.setdefault("MKL_NUM_THREADS", str(n))
    threadpool_limits(limits=n)  # the pools of libraries already loaded (numpy's BLAS)
    log.info("native thread pools limited to %d per process", n)
    return n
