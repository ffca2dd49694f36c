"""The fleet control loop: each cycle, read SkyPilot's managed jobs, compare with each target's
desired count, launch the missing (bounded per cycle and per cloud) and cancel a lasting surplus.

A job belongs to a target when its name is ``{target}-{8 hex}``: jobs of other targets or of
people sharing the account are never touched (but they do count against a cloud's cap, since
the cap is about the account's spot instances).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from services.ops.fleet.backlog import BacklogFn
from services.ops.fleet.config import FleetConfig, Target
from services.ops.fleet.sky import JobInfo, SkyClient

log = logging.getLogger(__name__)

# Cancel jobs that hold no GPU yet first, then the newest (least work in hand).
_CANCEL_ORDER = {"PENDING": 0, "SUBMITTED": 0, "STARTING": 1, "RECOVERING": 2, "RUNNING": 3}


def job_name(target: str) -> str:
    return f"{target}-{uuid.uuid4().hex[:8]}"


def owned_by(target: str, name: str) -> bool:
    return re.fullmatch(rf"{re.escape(target)}-[0-9a-f]{{8}}", name) is not None


@dataclass
class CycleReport:
    desired: dict[str, int] = field(default_factory=dict)
    active: dict[str, int] = field(default_factory=dict)
    launched: list[tuple[str, str, str | None]] = field(default_factory=list)  # target,name,cloud
    cancelled: list[tuple[str, int]] = field(default_factory=list)  # target, job id
    capped: dict[str, int] = field(default_factory=dict)  # target -> launches held back by caps
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{t}: {self.active[t]}/{self.desired[t]}" for t in self.desired]
        return (f"active/desired {', '.join(parts)}; launched {len(self.launched)}, "
                f"cancelled {len(self.cancelled)}, held by cap {sum(self.capped.values())}")


class Fleet:
    def __init__(self, config: FleetConfig, client: SkyClient,
                 backlog: BacklogFn | None = None) -> None:
        self.config = config
        self.client = client
        self.backlog = backlog
        self._surplus_cycles: Counter[str] = Counter()
        self._cloud_of_name: dict[str, str] = {}  # clouds we chose, until SkyPilot reports one

    # --- one cycle -------------------------------------------------------------------------------
    def desired(self, name: str, target: Target) -> int:
        if target.backlog is None:
            return target.count
        if self.backlog is None:
            raise RuntimeError(f"target {name!r} follows a backlog but no broker is configured")
        return target.backlog.desired(self.backlog(target.backlog.queue))

    def _cloud(self, job: JobInfo) -> str | None:
        return job.cloud or self._cloud_of_name.get(job.name)

    def reconcile(self, dry_run: bool = False) -> CycleReport:
        rep = CycleReport()
        jobs = self.client.queue()
        active_all = [j for j in jobs if j.active]
        per_cloud: Counter[str] = Counter(c for j in active_all if (c := self._cloud(j)))
        deficits: dict[str, int] = {}
        for name, target in self.config.targets.items():
            mine = [j for j in active_all if owned_by(name, j.name)]
            try:
                want = self.desired(name, target)
            except Exception as e:  # noqa: BLE001 - broker away: keep what runs, launch nothing for it
                rep.errors.append(f"{name}: backlog unavailable: {e}")
                log.warning("%s: backlog unavailable (%s); holding at %d", name, e, len(mine))
                want = len(mine)
            rep.desired[name], rep.active[name] = want, len(mine)
            if len(mine) > want:
                self._surplus_cycles[name] += 1
                if self._surplus_cycles[name] >= self.config.scale_down_after_cycles:
                    self._cancel(name, mine, len(mine) - want, rep, dry_run)
            else:
                self._surplus_cycles[name] = 0
                if want > len(mine):
                    deficits[name] = want - len(mine)
        self._launch(deficits, per_cloud, rep, dry_run)
        return rep

    def _cancel(self, name: str, mine: list[JobInfo], n: int, rep: CycleReport,
                dry_run: bool) -> None:
        victims = sorted(mine, key=lambda j: (_CANCEL_ORDER.get(j.status, 9), -j.job_id))[:n]
        ids = [j.job_id for j in victims]
        if not dry_run:
            self.client.cancel(ids)
        rep.cancelled += [(name, i) for i in ids]
        self._surplus_cycles[name] = 0

    def _pick_cloud(self, target: Target, per_cloud: Counter[str]) -> tuple[bool, str | None]:
        if not target.providers:
            return True, None  # the template's any_of decides; counted once SkyPilot reports it
        room = [p for p in target.providers if per_cloud[p.lower()] < self.config.cap(p)]
        if not room:
            return False, None
        return True, min(room, key=lambda p: per_cloud[p.lower()])  # spread: emptiest first

    def _launch(self, deficits: dict[str, int], per_cloud: Counter[str], rep: CycleReport,
                dry_run: bool) -> None:
        budget = self.config.max_launch_per_cycle
        pending = dict(deficits)
        while budget > 0 and any(pending.values()):  # round-robin: every target gets a turn
            for name in list(pending):
                if budget == 0 or pending[name] == 0:
                    continue
                target = self.config.targets[name]
                ok, cloud = self._pick_cloud(target, per_cloud)
                if not ok:
                    rep.capped[name] = pending.pop(name)
                    log.warning("%s: every provider at its cap; %d launches held",
                                name, rep.capped[name])
                    continue
                jname = job_name(name)
                pending[name] -= 1
                budget -= 1
                if not dry_run:
                    try:
                        self.client.launch(target.template, jname, gpus=target.type,
                                           cloud=cloud, env=target.env)
                    except Exception as e:  # noqa: BLE001 - one failed launch must not stop the loop
                        rep.errors.append(f"{name}: launch failed: {e}")
                        log.error("%s: launch of %s failed: %s", name, jname, e)
                        continue
                if cloud:
                    per_cloud[cloud.lower()] += 1
                    self._cloud_of_name[jname] = cloud.lower()
                rep.launched.append((name, jname, cloud))
            pending = {k: v for k, v in pending.items() if v > 0}

    # --- the loop ---------------------------------------------------------------------------------
    def run(self, cycles: int | None = None, dry_run: bool = False,
            sleep: Callable[[float], None] = time.sleep,
            on_cycle: Callable[[CycleReport], None] | None = None) -> None:
        n = 0
        while cycles is None or n < cycles:
            t0 = time.monotonic()
            try:
                rep = self.reconcile(dry_run=dry_run)
                log.info("fleet: %s", rep.summary())
                if on_cycle:
                    on_cycle(rep)
            except Exception:  # SkyPilot API hiccup: try again next cycle
                log.exception("fleet: cycle failed")
            n += 1
            if cycles is None or n < cycles:
                sleep(max(0.0, self.config.poll_interval_sec - (time.monotonic() - t0)))
