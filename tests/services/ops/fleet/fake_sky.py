"""An in-memory SkyPilot managed-jobs controller for the fleet tests."""

from __future__ import annotations

from services.ops.fleet.sky import JobInfo


class FakeSky:
    def __init__(self) -> None:
        self.jobs: dict[int, dict] = {}
        self.launches: list[dict] = []
        self.cancels: list[int] = []
        self._next = 1

    # --- SkyClient ---------------------------------------------------------------------------
    def queue(self) -> list[JobInfo]:
        return [JobInfo(i, j["name"], j["status"], j["cloud"]) for i, j in self.jobs.items()
                if j["status"] not in ("SUCCEEDED", "CANCELLED", "FAILED")]

    def launch(self, template: str, name: str, *, gpus=None, cloud=None, env=None) -> None:
        self.launches.append({"template": template, "name": name, "gpus": gpus, "cloud": cloud,
                              "env": env})
        self.jobs[self._next] = {"name": name, "status": "PENDING", "cloud": None,
                                 "chosen": cloud}
        self._next += 1

    def cancel(self, job_ids: list[int]) -> None:
        self.cancels += job_ids
        for i in job_ids:
            self.jobs[i]["status"] = "CANCELLED"

    # --- what the cloud does -------------------------------------------------------------------
    def start_all(self) -> None:
        for j in self.jobs.values():
            if j["status"] in ("PENDING", "STARTING"):
                j["status"], j["cloud"] = "RUNNING", j["chosen"] or "aws"

    def set(self, job_id: int, status: str) -> None:
        self.jobs[job_id]["status"] = status

    def add_foreign(self, name: str, status: str, cloud: str) -> int:
        self.jobs[self._next] = {"name": name, "status": status, "cloud": cloud, "chosen": cloud}
        self._next += 1
        return self._next - 1

    def ids(self, prefix: str, status: str | None = None) -> list[int]:
        return [i for i, j in self.jobs.items() if j["name"].startswith(prefix + "-")
                and (status is None or j["status"] == status)]
