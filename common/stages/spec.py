"""What a stage declares about itself, and the order of stages: generic, names no stage.

Each stage owns its :class:`StageSpec` (``services/<stage>/spec.py``): its name, what it reads,
the key of its output, its ledger directory, its settings section and the class that processes
a shard. The pipeline
order is a :class:`Pipeline` declared in ``services/pipeline.py``; common code is handed one, so
``common/`` never names a stage (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydantic import field_validator

from common.settings import Settings, one_of, section
from common.stages.contract import InputRef

if TYPE_CHECKING:
    from common.models.fetch import ModelSpec
    from common.stages.contract import Stage
    from common.storage import Store


def _symbol(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Deploy:
    """Where a stage's worker runs and what its image holds: its deploy entries (its image,
    its SkyPilot task, its compose service) are written from this (``onsei deploy``)."""

    extra: str | None  # the pyproject extra of its model stack (None: the base install)
    image: str  # the image it builds on
    image_why: str  # a comment: why that base
    gpu_memory: str  # a comment: its GPU memory per worker process, and at what
    metrics_port: int  # its metrics' port on the host of a one-box compose setup
    apt: tuple[str, ...] = ()  # system packages besides python3, its venv and ffmpeg
    apt_why: tuple[str, ...] = ()  # comment lines: why they are needed


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
    # objects it publishes beside its output, by name (enhance: dedup's "signatures"); named
    # from the generic settings alone, so a corpus step finds them with its own section
    side_outputs: Callable[[Settings, int], dict[str, str]] | None = None
    # its fleet's image and machines (None: a stage with no deploy entries of its own)
    deploy: Deploy | None = None
    # glibc's mmap threshold in its processes when ONSEI_WORKER_MMAP_THRESHOLD_KB is -1 (0: the
    # allocator's own; allocator.ONE_HEAP: one heap, nothing mapped; common/node/allocator.py):
    # a stage that needs flat memory on long members maps its large buffers on their own, one
    # whose model asks for the same large buffers window after window keeps them in one heap
    mmap_threshold_kb: int = 0
    # the steps of its work on a shard, in order, each "package.module:Class" (its own
    # interface: enhance's services/enhance/chain.py), imported only by a process that runs it
    steps: tuple[str, ...] = ()

    def section(self, settings: Settings) -> Settings:
        """The stage's section of ``settings``: the one way a stage's code gets its settings
        (every call below goes through it), so a stage never sees settings without its own."""
        return section(settings, self.settings)

    def ledger_subdir(self, settings: Settings) -> str:
        return self.ledger_dir(self.section(settings)) if self.ledger_dir else self.name

    def load_class(self) -> type[Stage]:
        return cast("type[Stage]", _symbol(self.stage_class))

    def load_steps(self) -> list[Any]:
        """The classes :attr:`steps` names, in order."""
        return [_symbol(ref) for ref in self.steps]

    def load_models(self, settings: Settings) -> list[ModelSpec]:
        return _symbol(self.models)(self.section(settings)) if self.models else []

    def side_output_key(self, name: str, settings: Settings, shard_id: int) -> str:
        keys = self.side_outputs(settings, shard_id) if self.side_outputs else {}
        if name not in keys:
            raise ValueError(f"stage {self.name!r} declares no side output {name!r}")
        return keys[name]


@dataclass(frozen=True)
class CorpusStep:
    """A step over the whole corpus, not one shard (dedup): its own command, run when the
    operator chooses. It reads the side output ``reads`` that stage ``after`` publishes beside
    each done shard, and writes one result, whose last-written object is ``result``; stage
    ``applied_by`` reads that result for each shard it processes and does not wait for it (a
    shard it reaches first gets what the result covers then, and says so in its done record).
    Declared in ``services/<step>/step.py``; the pipeline lists it, so the commands see it."""

    name: str  # its command (``onsei <name>``) and its records (``_ledger/<name>/``)
    after: str
    reads: str
    result: str  # relative to the output root
    applied_by: str
    # "module:function" (store) -> the shard ids its result covers, None when it never ran;
    # raises ``ValueError`` (or a storage error) when the result cannot be read
    covered: str

    def covered_shards(self, store: Store) -> frozenset[int] | None:
        got = _symbol(self.covered)(store)
        return None if got is None else frozenset(got)


class Pipeline:
    """Stages in order: each hands its shards on to the next.

    Built from the specs, or from the names in order and ``load`` (name -> spec), which imports
    a spec (and its settings section) the first time it is asked for: a worker of one stage
    then loads its own and those before it (:meth:`settings_upto`), never a later stage's.
    """

    def __init__(self, specs: Iterable[StageSpec] = (), *, names: Iterable[str] = (),
                 load: Callable[[str], StageSpec] | None = None,
                 corpus: Iterable[Callable[[], CorpusStep]] = ()) -> None:
        given = tuple(specs)
        self.names: tuple[str, ...] = tuple(s.name for s in given) or tuple(names)
        self._by_name = {s.name: s for s in given}
        self._load = load
        self._settings: dict[str, type[Settings]] = {}
        self._corpus = tuple(corpus)  # each loads its step when the steps are first asked for
        self._steps: tuple[CorpusStep, ...] | None = None
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

    def side_output_key(self, name: str, output: str, settings: Settings, shard_id: int) -> str:
        return self.spec(name).side_output_key(output, settings, shard_id)

    @property
    def corpus_steps(self) -> tuple[CorpusStep, ...]:
        """The corpus steps, each checked against the stages: its result is applied by a stage
        after the one it reads (whose side output it names: :meth:`side_output_key`)."""
        if self._steps is None:
            steps = tuple(load() for load in self._corpus)
            for c in steps:
                if self._index(c.applied_by) <= self._index(c.after):
                    raise ValueError(f"corpus step {c.name!r}: {c.applied_by!r} applies it, "
                                     f"which is not after {c.after!r}")
            self._steps = steps
        return self._steps

    def corpus_step(self, name: str) -> CorpusStep:
        for c in self.corpus_steps:
            if c.name == name:
                return c
        raise ValueError(f"unknown corpus step {name!r}")


def _joined(sections: tuple[type[Settings], ...], names: tuple[str, ...]) -> type[Settings]:
    """One settings class with every stage's section: what a process of the pipeline reads
    (``onsei config`` lists it). A section that another one already includes adds nothing.
    It knows the stages, so ``until`` is checked here, not when a shard is handed on.
    Two sections may share a field only through a common base (asr and enhance: the Whisper
    section): the same name declared twice is one setting read two ways, refused here."""
    collisions(sections)
    for section_cls in sections:
        unprefixed(section_cls)
    bases = tuple(dict.fromkeys(c for c in reversed(sections)
                                if not any(o is not c and issubclass(o, c) for o in sections)))

    def known_stage(cls: type, v: str) -> str:
        return one_of(v, names, "stage") if v else v

    return type("PipelineSettings", bases, {
        "__module__": __name__, "__doc__": "Every stage's settings section.",
        "_known_stage": field_validator("until")(known_stage)})


def _declarer(cls: type[Settings], name: str) -> type:
    """The class in ``cls``'s MRO whose own annotations declare the field ``name``."""
    return next(c for c in cls.__mro__ if name in inspect.get_annotations(c))


def collisions(sections: tuple[type[Settings], ...]) -> None:
    """Refuse two settings sections that declare the same field on their own (not by a
    shared base): the flat ``ONSEI_*`` namespace would give both one value unnoticed."""
    seen: dict[str, type] = {}
    for cls in sections:
        for name in cls.model_fields:
            owner = _declarer(cls, name)
            other = seen.setdefault(name, owner)
            if other is not owner:
                raise ValueError(
                    f"settings ONSEI_{name.upper()} is declared by both {other.__module__}."
                    f"{other.__qualname__} and {owner.__module__}.{owner.__qualname__}: rename "
                    f"one (each section's fields carry its prefix) or move it to a shared base")


def unprefixed(cls: type[Settings]) -> None:
    """Refuse a section field that does not carry one of its section's prefixes: a stage's
    settings read as ``ONSEI_<STAGE>_...`` so their owner is plain from the name."""
    for c in cls.__mro__:
        own = c.__dict__.get("prefixes")
        if not own:
            continue
        for name in inspect.get_annotations(c):
            if name in cls.model_fields and not name.startswith(own):
                raise ValueError(f"setting {name} of {c.__module__}.{c.__qualname__} does not "
                                 f"start with its section's prefix ({', '.join(own)})")
