"""How far each corpus step (services/pipeline.py, ``CORPUS``: dedup) is, as the operator
commands show it: ``onsei status`` (a line per step) and ``enqueue-shards`` (the shards it sends
towards the stage that applies a step whose result does not cover them yet)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass

from common.stages.spec import CorpusStep
from common.storage import StorageError, Store


@dataclass
class StepProgress:
    name: str
    after: str
    applied_by: str
    ran: bool = False
    done: int = 0  # shards done at ``after`` (in the range asked)
    covered: int = 0  # of those, the ones its result covers
    error: str | None = None  # its result could not be read: the rest is unknown

    @property
    def behind(self) -> int:
        return self.done - self.covered

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "behind": None if self.error else self.behind}

    def line(self) -> str:
        head = f"{self.name} (after {self.after}, applied by {self.applied_by})"
        if self.error:
            return f"{head}: result unreadable ({self.error}); run `onsei {self.name}` again"
        if not self.ran:
            return f"{head}: not run ({self.done} {self.after} shards: `onsei {self.name}`)"
        return (f"{head}: covers {self.covered}/{self.done} {self.after} shards, "
                f"{self.behind} behind")


def read_covered(step: CorpusStep, store: Store) -> tuple[frozenset[int] | None, str | None]:
    """The shards the step's result covers (None: it never ran), or why it cannot be read."""
    try:
        return step.covered_shards(store), None
    except (ValueError, StorageError) as e:
        return None, f"{step.result}: {e}"[:300]


def progress(step: CorpusStep, store: Store, done: Collection[int]) -> StepProgress:
    p = StepProgress(step.name, step.after, step.applied_by, done=len(done))
    covered, p.error = read_covered(step, store)
    p.ran = covered is not None or p.error is not None
    if covered is not None:
        p.covered = sum(1 for i in done if i in covered)
    return p


def uncovered(step: CorpusStep, store: Store, ids: Iterable[int]) -> tuple[int, str | None]:
    """How many of ``ids`` the step's result does not cover (all of them before it ran)."""
    covered, error = read_covered(step, store)
    return sum(1 for i in ids if covered is None or i not in covered), error
