"""The SkyPilot side of the fleet: a small protocol and the real client (the `sky` CLI).

The real client passes argument lists (never a shell string), so no job name, path or cloud can
inject anything; secrets travel as `--env NAME`, whose value SkyPilot reads from our own
environment, so they never appear on a command line or in a file.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

# pending/submitted/starting/running/recovering hold (or will hold) an instance: counting them
# as active means we never launch a duplicate while SkyPilot recovers a preempted job itself.
ACTIVE = frozenset({"PENDING", "SUBMITTED", "STARTING", "RUNNING", "RECOVERING"})
CLOUDS = ("aws", "gcp", "azure", "lambda", "runpod", "oci", "kubernetes", "fluidstack",
          "paperspace", "cudo", "vast", "nebius", "ibm", "scp", "vsphere", "do", "hyperbolic")


@dataclass(frozen=True)
class JobInfo:
    job_id: int
    name: str
    status: str  # ManagedJobStatus name, upper case
    cloud: str | None = None  # lower case, when SkyPilot reports where it runs

    @property
    def active(self) -> bool:
        return self.status.upper() in ACTIVE


class SkyClient(Protocol):
    def queue(self) -> list[JobInfo]: ...

    def launch(self, template: str, name: str, *, gpus: str | None = None,
               cloud: str | None = None, env: list[str] | None = None) -> None: ...

    def cancel(self, job_ids: list[int]) -> None: ...


def cloud_of(resources: str) -> str | None:
    """'1x AWS(g5.xlarge, {'A10G': 1})' / 'GCP' -> 'aws' / 'gcp'."""
    low = resources.lower()
    for c in CLOUDS:
        if re.search(rf"\b{re.escape(c)}\b", low):
            return c
    return None


class SkyCliClient:
    """Shells out to `sky jobs ...`; the `sky` package is never imported into this process."""

    def __init__(self, sky: str | None = None, timeout: float = 600.0) -> None:
        exe = sky or shutil.which("sky")
        if exe is None:
            raise RuntimeError("the `sky` CLI is not installed (pip install 'skypilot[aws,gcp]')")
        self.sky = exe
        self.timeout = timeout

    def _run(self, args: list[str]) -> str:
        proc = subprocess.run([self.sky, *args], capture_output=True, text=True, check=False,
                              timeout=self.timeout, env=os.environ.copy())
        if proc.returncode != 0:
            raise RuntimeError(f"sky {args[0]} {args[1]} failed ({proc.returncode}): "
                               f"{proc.stderr.strip()[-500:]}")
        return proc.stdout

    def queue(self) -> list[JobInfo]:
        return parse_queue_table(self._run(["jobs", "queue", "--skip-finished"]))

    def launch(self, template: str, name: str, *, gpus: str | None = None,
               cloud: str | None = None, env: list[str] | None = None) -> None:
        args = ["jobs", "launch", "--yes", "--detach-run", "--name", name]
        if gpus:
            args += ["--gpus", gpus]
        if cloud:
            args += ["--cloud", cloud]
        for var in env or []:
            args += ["--env", var]  # NAME only: the value comes from os.environ
        self._run([*args, template])

    def cancel(self, job_ids: list[int]) -> None:
        if job_ids:
            self._run(["jobs", "cancel", "--yes", *[str(j) for j in job_ids]])


def parse_queue_table(text: str) -> list[JobInfo]:
    """Parse `sky jobs queue` output: a header line with ID, NAME, RESOURCES ... STATUS columns,
    cut at the header's column starts (cells may contain spaces)."""
    lines = text.splitlines()
    head_i = next((i for i, ln in enumerate(lines)
                   if re.match(r"^\s*ID\s", ln) and "STATUS" in ln and "NAME" in ln), None)
    if head_i is None:
        return []
    header = lines[head_i]
    starts = [m.start() for m in re.finditer(r"(?<!\S)\S+(?: \S+)*", header)]
    names = [header[s:].split("  ")[0].strip() for s in starts]
    jobs: list[JobInfo] = []
    for ln in lines[head_i + 1:]:
        if not ln.strip() or not re.match(r"^\s*\d+\s", ln):
            continue
        cells = {}
        for k, s in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(ln)
            cells[names[k]] = ln[s:end].strip()
        status = (cells.get("STATUS", "").split() or ["UNKNOWN"])[0].upper()
        jobs.append(JobInfo(int(cells["ID"].split()[0]), cells.get("NAME", ""), status,
                            cloud_of(" ".join(cells.get(c, "") for c in
                                              ("INFRA", "CLOUD", "RESOURCES", "REQUESTED")))))
    return jobs
