"""The pipeline, declared once: the stages in order. A stage's spec (``services/<stage>/spec.py``)
is imported the first time a process asks for it.

A stage's fleet entry points, ``services/<stage>/celery.py`` and ``tasks.py`` (where Celery's
``-A services.<stage>`` looks), get their app and task here: a worker loads its own stage's spec
and settings section and those of the stages before it (it resolves their output keys, the
engine hands them to the stage), never a later stage's, and hands shards on to the next stage
by queue name. Stage code (spec, settings, processing) imports neither this module nor
``services/stages.py``, the operator commands' view of the same pipeline with every section
loaded (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from common.settings import ConfigError, Settings, describe_errors
from common.stages.spec import Pipeline, StageSpec

if TYPE_CHECKING:
    from celery import Celery, Task

ORDER: tuple[str, ...] = ("asr", "enhance", "tokenize")


def _spec(name: str) -> StageSpec:
    spec: StageSpec = importlib.import_module(f"services.{name}.spec").SPEC
    return spec


PIPELINE = Pipeline(names=ORDER, load=_spec)


def boot(settings_class: type[Settings], **overrides: Any) -> Settings:
    """The settings of a process started outside the ``onsei`` command (a Celery worker or
    Flower importing its app module): an invalid value stops it with one line per value on
    stderr, before the app exists (Celery would print the traceback of a failed import)."""
    try:
        return settings_class(**overrides)
    except ValidationError as e:
        sys.exit(f"Error: {describe_errors(e)}")
    except ConfigError as e:
        sys.exit(f"Error: {e}")


def make_app(main: str, settings: Settings) -> Celery:
    """``make_app("services.asr")``: a worker of it reads only the ``asr`` queue, even without
    ``-Q``, and is named ``asr@host``; any other name (the CLI, Flower) knows every queue."""
    from common.queue.config import make_app as _make_app  # the one-process runner needs no Celery

    stage = main.rsplit(".", 1)[-1]
    if stage in PIPELINE:
        return _make_app(main, settings, queues=(stage,),
                         include=(f"{main}.tasks",), node=stage)
    return _make_app(main, settings, queues=PIPELINE.names)


def worker_app(stage: str) -> Celery:
    """The app of ``celery -A services.<stage> worker``, its settings (the stage's section and
    those before it) checked before the worker starts."""
    return make_app(f"services.{stage}", boot(PIPELINE.settings_upto(stage)))


def worker_task(app: Celery, stage: str) -> Task:
    """The stage's task on its app: the engine as a task (common/queue/worker.py)."""
    from common.queue.worker import register_stage_task

    return register_stage_task(app, PIPELINE, stage)
