"""The contract between a stage's pure processing and whoever drives it.

A stage (``services/<stage>/stage.py``) is a class implementing :class:`Stage`; what it reads
and writes is its spec (:mod:`common.stages.spec`). The Celery task of the stage and the
one-process runner both drive it through :class:`common.stages.engine.Engine`, which downloads the
inputs, calls :meth:`Stage.process`, publishes the outputs whole, then writes the done record
last. Importing a stage module imports no Celery and no model stack.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from common.models.clock import ModelClock
from common.settings import Settings
from common.storage import Store

Root = Literal["input", "output", "stage"]


@dataclass(frozen=True)
class InputRef:
    """One object a stage reads for a shard: which root (raw input or output) and which key;
    root ``stage``: the output of the stage named by ``key`` (resolved by the pipeline)."""

    root: Root
    key: str

    @classmethod
    def of_stage(cls, name: str) -> InputRef:
        return cls("stage", name)


@dataclass
class StageResult:
    """What :meth:`Stage.process` produced for one shard."""

    outputs: dict[str, Path]  # output key (relative to the output root) -> local file
    counts: dict[str, int] = field(default_factory=dict)  # e.g. files, kept, dropped, errors
    audio_seconds_in: float = 0.0
    audio_seconds_out: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # stage-specific (e.g. padded_fraction)


class Stage(abc.ABC):
    """Pure processing of one shard by one stage. Holds its model; loads it once per process.

    ``clock``: the stage times its model calls with it (``with self.clock.model(): ...``); the
    engine resets it before :meth:`process` and writes the done record's ``model_seconds``.
    """

    name: ClassVar[str]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.clock = ModelClock()
        # the engine's stores, bound before each :meth:`process` (:meth:`bind_stores`)
        self.input_store: Store | None = None
        self.output_store: Store | None = None
        # each input's key in its store, bound with the stores: what an error names, so a
        # stage never needs the pipeline to know where another stage's output lives
        self.input_keys: dict[str, str] = {}
        # the corpus steps the pipeline declares this stage applies, by name: the key of each
        # one's result in the output store (common.stages.spec.CorpusStep)
        self.applies: dict[str, str] = {}

    def bind_stores(self, input_store: Store, output_store: Store,
                    input_keys: dict[str, str] | None = None,
                    applies: dict[str, str] | None = None) -> None:
        """The stores the engine reads and writes: a stage reads the result of a corpus step
        it applies (tokenize: dedup's) through these, never opens its own. ``input_keys``: the
        key of each input of this shard (by input name); ``applies``: the corpus steps it
        applies (by name: their result's key)."""
        self.input_store, self.output_store = input_store, output_store
        self.input_keys = dict(input_keys or {})
        self.applies = dict(applies or {})

    @abc.abstractmethod
    def load(self) -> None:
        """Load the model (idempotent). Called after fork, never in a Celery parent."""

    @abc.abstractmethod
    def model_info(self) -> dict[str, Any]:
        """``{"model": name, "version": ..., ...}`` for the done record."""

    @abc.abstractmethod
    def process(self, shard_id: int, inputs: dict[str, Path], workdir: Path) -> StageResult:
        """Turn the local input files into local output files under ``workdir``; the engine
        resolved each input (``inputs``: its local path, :attr:`input_keys`: its key)."""
