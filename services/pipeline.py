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
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from common.errors import ConfigError
from common.settings import Settings, describe_errors
from common.stages.spec import CorpusStep, Pipeline, StageSpec

if TYPE_CHECKING:
    from celery import Celery, Task

# The stages in order, each its package: a stage is its folder (spec.py, settings.py, stage.py,
# celery.py, tasks.py) and one line here (docs/architecture.md, "Adding a stage").
DECLARED: tuple[str, ...] = (
    "services.asr",
    "services.enhance",
    "services.tokenize",
)
# The same list from the environment, for a stage outside this checkout (a package on the
# path): "asr,enhance,mypkg.denoise2,tokenize", a bare name meaning services.<name>. Read once,
# here: which stages exist decides which settings sections exist, so it cannot be one of them.
ENV = "ONSEI_PIPELINE"
_PACKAGE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def declared(environ: Mapping[str, str] = os.environ) -> dict[str, str]:  # reads "ONSEI_PIPELINE"
    """Stage name -> its package, in pipeline order: ``ONSEI_PIPELINE`` when set, else
    :data:`DECLARED`. A stage's name is its package's last part (its spec says the same)."""
    value = environ.get(ENV, "").strip()  # "ONSEI_PIPELINE"
    packages = [p.strip() for p in value.split(",")] if value else list(DECLARED)
    out: dict[str, str] = {}
    for p in packages:
        if not _PACKAGE.fullmatch(p):
            raise ConfigError(f"{ENV}: {p!r} is not a package name (the stages' packages in "
                              f"order, comma-separated)")
        package = p if "." in p else f"services.{p}"
        name = package.rsplit(".", 1)[-1]
        if name in out:
            raise ConfigError(f"{ENV}: two stages named {name!r} ({out[name]}, {package})")
        out[name] = package
    return out


try:
    PACKAGES = declared()
except ConfigError as e:  # imported by every entry point: one line, no traceback
    sys.exit(f"Error: {e}")


# The corpus steps (common.stages.spec.CorpusStep), each its package's ``step.py``: what it
# reads, what it writes and which stage applies it, so the commands see it.
CORPUS: tuple[str, ...] = (
    "services.dedup",
    "services.speakers",
)


def _spec(name: str) -> StageSpec:
    spec: StageSpec = importlib.import_module(f"{PACKAGES[name]}.spec").SPEC
    return spec


def _step(package: str) -> Callable[[], CorpusStep]:
    return lambda: cast(CorpusStep, importlib.import_module(f"{package}.step").STEP)


PIPELINE = Pipeline(names=tuple(PACKAGES), load=_spec, corpus=[_step(p) for p in CORPUS])


def boot(settings_class: type[Settings], **overrides: Any) -> Settings:
    """The settings of a process started outside the ``onsei`` command (a Celery worker or
    Flower importing its app module): an invalid value stops it with one line per value on
    stderr, before the app exists (Celery would print the traceback of a failed import)."""
    from common.setting_names import check_names

    try:
        # a misspelt name would leave its setting at the default: refused (those it can judge)
        check_names((settings_class,), PIPELINE.names, every_section=False)
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
    if PACKAGES.get(stage) == main:
        return _make_app(main, settings, queues=(stage,),
                         include=(f"{main}.tasks",), node=stage)
    return _make_app(main, settings, queues=PIPELINE.names)


def worker_app(stage: str) -> Celery:
    """The app of ``celery -A <the stage's package> worker``, its settings (the stage's section
    and those before it) checked before the worker starts."""
    if stage not in PACKAGES:
        sys.exit(f"Error: stage {stage!r} is not in the pipeline ({', '.join(PACKAGES)}; "
                 f"{ENV} adds a stage from another package)")
    return make_app(PACKAGES[stage], boot(PIPELINE.settings_upto(stage)))


def worker_task(app: Celery, stage: str) -> Task:
    """The stage's task on its app: the engine as a task (common/queue/worker.py)."""
    from common.queue.worker import register_stage_task

    return register_stage_task(app, PIPELINE, stage)
