"""What a stage declares about itself, and the order of stages: generic, names no stage.

Each stage owns its :class:`StageSpec` (``services/<stage>/spec.py``): its name, what it reads,
the key of its output, its ledger directory, its settings section and the class that processes
a shard. The pipeline
order is a :class:`Pipeline` built in ``services/stages.py``; common code is handed one, so
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
    """Stages in order: each hands its shards on to the next."""

    def __init__(self, specs: Iterable[StageSpec]) -> None:
        self.specs = tuple(specs)
        self.names: tuple[str, ...] = tuple(s.name for s in self.specs)
        self._by_name = {s.name: s for s in self.specs}
        self.settings_class = _joined(tuple(s.settings for s in self.specs), self.names)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def spec(self, name: str) -> StageSpec:
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"unknown stage {name!r} (known: {', '.join(self.names)})") from None

    @property
    def last(self) -> str:
        return self.names[-1]

    def previous(self, name: str) -> str | None:
        i = self.names.index(self.spec(name).name)
        return self.names[i - 1] if i > 0 else None

    def next(self, name: str, until: str | None = None) -> str | None:
        """The stage after ``name``, or None past ``until`` (default: the last stage)."""
        i = self.names.index(self.spec(name).name)
        end = self.names.index(self.spec(until or self.last).name)
        return self.names[i + 1] if i < end else None

    def chain(self, first: str, until: str | None = None) -> list[str]:
        a = self.names.index(self.spec(first).name)
        b = self.names.index(self.spec(until or self.last).name)
        return list(self.names[a:b + 1])

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
