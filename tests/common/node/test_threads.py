"""A worker process caps the native thread pools of the libraries it has loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from common.node.threads import native_threads
from common.settings import Settings


def test_cores_shared_among_the_workers_processes() -> None:
    assert native_threads(Settings(worker_concurrency=4), cores=16) == 4
    assert native_threads(Settings(worker_concurrency=3), cores=2) == 1
    assert native_threads(Settings(worker_concurrency=4, worker_native_threads=6), cores=16) == 6


def test_limit_applies_to_numpys_blas_already_loaded() -> None:
    # a fresh interpreter: the limit is process-wide and must not leak into this one
    code = textwrap.dedent("""
        import json, os
        import numpy, threadpoolctl
        from common.node.threads import limit_native_threads
        from common.settings import Settings
        limit_native_threads(Settings(worker_native_threads=1))
        print(json.dumps({"pools": [p["num_threads"] for p in threadpoolctl.threadpool_info()],
                          "env": os.environ["OPENBLAS_NUM_THREADS"]}))
    """)
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, env=env, check=True).stdout)
    assert out["pools"] and all(n == 1 for n in out["pools"])  # numpy's BLAS at least
    assert out["env"] == "1"  # for a library loaded after (torch's OpenMP)
