"""This node's accelerator as the price table names it, when ``ONSEI_NODE_TYPE`` is unset
(docs/operations.md, "Cost"): ``nvidia-smi``'s GPU name mapped onto common/node/price.py's types.

Asked once per process, with a short timeout, and only when a done record is written: a node
without nvidia-smi (a CPU node, a container without the driver tools) is ``unknown`` at once,
never stalled. Cloud metadata servers are not asked: on a machine without one a connection to
the link-local address hangs until its timeout, at every worker start.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
TIMEOUT_S = 5.0
# (pattern over the upper-cased name, table type), first match wins: the longer names first
# (A100 80GB before A100, L40S before L4, A10G before A10).
GPU_NAMES: tuple[tuple[str, str], ...] = (
    (r"\bH200\b", "H200"),
    (r"\bH100\b", "H100"),
    (r"\bA100\b.*\b80\s*GB\b", "A100-80GB"),
    (r"\bA100\b", "A100"),
    (r"\bL40S\b", "L40S"),
    (r"\bA10G\b", "A10G"),
    (r"\bL4\b", "L4"),
    (r"\bA10\b", "A10"),
    (r"\bT4\b", "T4"),
    (r"\bV100\b", "V100"),
)


def type_of_gpu(name: str) -> str:
    """``NVIDIA A100-SXM4-80GB`` -> ``A100-80GB``; a GPU the table lacks keeps its own name
    (``NVIDIA GeForce RTX 4090`` -> ``GeForce RTX 4090``: recorded, left unpriced)."""
    upper = re.sub(r"[-_]", " ", name.upper())
    for pattern, node_type in GPU_NAMES:
        if re.search(pattern, upper):
            return node_type
    return re.sub(r"^(NVIDIA|TESLA)\s+", "", name.strip(), flags=re.IGNORECASE) or UNKNOWN


@functools.cache
def gpu_names() -> tuple[str, ...]:
    """``nvidia-smi``'s name of each GPU of this node; none without it, or when it fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ()
    try:
        out = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("node type unknown (set ONSEI_NODE_TYPE): nvidia-smi failed: %s", e)
        return ()
    return tuple(line.strip() for line in out.stdout.splitlines() if line.strip())


@functools.cache
def detect() -> str:
    """The first GPU's type (one node has one type), else ``unknown``."""
    names = gpu_names()
    return type_of_gpu(names[0]) if names else UNKNOWN


DEV = Path("/dev")


def gpu_count() -> int:
    """How many GPUs this machine has: those nvidia-smi lists, else its NVIDIA device files
    (``/dev/nvidia0``...: a container given GPUs has them even without the driver's tools);
    0 on a machine without any."""
    names = gpu_names()
    if names:
        return len(names)
    return sum(1 for p in DEV.glob("nvidia*") if re.fullmatch(r"nvidia[0-9]+", p.name))
