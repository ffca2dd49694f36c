"""What a stage declares about itself, and the order of stages: generic, names no stage.

Each stage owns its :class:`StageSpec` (``services/<stage>/spec.py``): its name, what it reads,
the key of its output, its ledger directory, its settings section and the class that processes
a shard. The pipeline
order is a :class:`Pipeline` declared in ``services/pipeline.py``; common code is handed one, so
``common/`` never names a stage (docs/architecture.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydantic import field_validator

from common.settings import Settings, one_of, section
from common.stages.contract import InputRef

if TYPE_CHECKING:
    from common.models.fetch import ModelSpec
    from common.stages.contract import Stage


def _symbol(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class StageSpec:
    name: str
    # "package.module:Class", imported only by a process that runs the stage
    stage_class: str
    output_key: Callable[[Settings, int], str]  # relative to the output root
    # by input name; ``InputRef.of_stage(name)`` reads another stage's output
    inputs: Callable[[Settings, int], dict[str, InputRef]]
    # under ``_ledger/``; a stage with variants (one codec or another) gives each its own
    ledger_dir: Callable[[Settings], str] | None = None
    # "module:function" -> list[common.models.fetch.ModelSpec]: what `onsei models fetch` fetches
    models: str | None = None
    # the stage's settings section: a Settings subclass (services/<stage>/settings.py)
    settings: type[Settings] = Settings

    def section(self, settings: Settings) -> Settings:
        """The stage's section of ``settings``: the one way a stage's code gets its settings
        (every call below goes through it), so a stage never sees settings without its own."""
        return section(settings, self.settings)

    def ledger_subdir(self, settings: Settings) -> str:
        return self.ledger_dir(self.section(settings)) if self.ledger_dir else self.name

    def load_class(self) -> type[Stage]:
        return cast("type[Stage]", _symbol(self.stage_class))

    def load_models(self, settings: Settings) -> list[ModelSpec]:
        return _symbol(self.models)(self.section(settings)) if self.models else []


class Pipeline:
    """Stages in order: each hands its shards on to the next.

    Built from the specs, or from the names in order and ``load`` (name -> spec), which imports
    a spec (and its settings section) the first time it is asked for: a worker of one stage
    then loads its own and those before it (:meth:`settings_upto`), never a later stage's.
    """

    def __init__(self, specs: Iterable[StageSpec] = (), *, names: Iterable[str] = (),
                 load: Callable[[str], StageSpec] | None = None) -> None:
        given = tuple(specs)
        self.names: tuple[str, ...] = tuple(s.name for s in given) or tuple(names)
        self._by_name = {s.name: s for s in given}
        self._load = load
        self._settings: dict[str, type[Settings]] = {}
        if not self.names or (load is None) != bool(given):
            raise ValueError("a pipeline is its specs, or their names in order and a loader")

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def spec(self, name: str) -> StageSpec:
        self._index(name)
        if name not in self._by_name:
            assert self._load is not None
            spec = self._load(name)
            if spec.name != name:
                raise ValueError(f"the spec loaded for {name!r} is {spec.name!r}'s")
            self._by_name[name] = spec
        return self._by_name[name]

    @property
    def specs(self) -> tuple[StageSpec, ...]:
        return tuple(self.spec(n) for n in self.names)

    @property
    def settings_class(self) -> type[Settings]:
        """Every stage's settings section joined: what a process of the whole pipeline reads."""
        return self.settings_upto(self.last)

    def settings_upto(self, name: str) -> type[Settings]:
        """The sections of ``name`` and of the stages before it (whose outputs it may read:
        their keys come from their specs), joined: a worker of ``name`` reads these."""
        if name not in self._settings:
            chain = self.names[:self._index(name) + 1]
            self._settings[name] = _joined(tuple(self.spec(n).settings for n in chain),
                                           self.names)
        return self._settings[name]

    @property
    def last(self) -> str:
        return self.names[-1]

    def _index(self, name: str) -> int:
        """Where ``name`` stands: by name only, so handing a shard on loads no other spec."""
        if name not in self.names:
            raise ValueError(f"unknown stage {name!r} (known: {', '.join(self.names)})")
        return self.names.index(name)

    def previous(self, name: str) -> str | None:
        i = self._index(name)
        return self.names[i - 1] if i > 0 else None

    def next(self, name: str, until: str | None = None) -> str | None:
        """The stage after ``name``, or None past ``until`` (default: the last stage)."""
        i, end = self._index(name), self._index(until or self.last)
        return self.names[i + 1] if i < end else None

    def chain(self, first: str, until: str | None = None) -> list[str]:
        return list(self.names[self._index(first):self._index(until or self.last) + 1])

    def output_key(self, name: str, settings: Settings, shard_id: int) -> str:
        spec = self.spec(name)
        return spec.output_key(spec.section(settings), shard_id)

    def inputs(self, name: str, settings: Settings, shard_id: int) -> dict[str, InputRef]:
        """The stage's inputs with other stages' outputs resolved to their keys."""
        out = {}
        spec = self.spec(name)
        for k, ref in spec.inputs(spec.section(settings), shard_id).items():
            if ref.root == "stage":
                ref = InputRef("output", self.output_key(ref.key, settings, shard_id))
            out[k] = ref
        return out

    def ledger_subdir(self, name: str, settings: Settings) -> str:
        return self.spec(name).ledger_subdir(settings) if name in self else name


def _joined(sections: tuple[type[Settings], ...], names: tuple[str, ...]) -> type[Settings]:
    """One settings class with every stage's section: what a process of the pipeline reads
    (``onsei config`` lists it). A section that another one already includes adds nothing.
    It knows the stages, so ``until`` is checked here, not when a shard is handed on."""
    bases = tuple(dict.fromkeys(c for c in reversed(sections)
                                if not any(o is not c and issubclass(o, c) for o in sections)))

    def known_stage(cls: type, v: str) -> str:
        return one_of(v, names, "stage") if v else v

    return type("PipelineSettings", bases, {
        "__module__": __name__, "__doc__": "Every stage's settings section.",
        "_known_stage": field_validator("until")(known_stage)})
