"""The pipeline order, and the helpers that need it: the one place that lists the stages.

Stages never import each other; each owns its spec (``services/<stage>/spec.py``) and this
module strings them together (docs/architecture.md).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from common.ledger.store import Ledger
from common.settings import ConfigError, Settings, describe_errors
from common.stages.spec import Pipeline
from common.storage import Store, open_store
from services.asr.spec import SPEC as ASR
from services.enhance.spec import SPEC as ENHANCE
from services.tokenize.spec import SPEC as TOKENIZE

if TYPE_CHECKING:
    from celery import Celery

PIPELINE = Pipeline((ASR, ENHANCE, TOKENIZE))
STAGES: tuple[str, ...] = PIPELINE.names
# Every setting: the generic ones (common/settings.py) and each stage's section
# (services/<stage>/settings.py), from the same ONSEI_* names and ONSEI_CONFIG file. Each entry
# point builds one (a CLI command, ``onsei run``, a worker's app module: :func:`boot_settings`)
# and passes it down; nothing below an entry point reads the environment for settings.
PipelineSettings: type[Settings] = PIPELINE.settings_class


def boot_settings(**overrides: Any) -> Settings:
    """The settings of a process started outside the ``onsei`` command (a Celery worker or
    Flower importing its app module): an invalid value stops it with one line per value on
    stderr, before the app exists (Celery would print the traceback of a failed import)."""
    try:
        return PipelineSettings(**overrides)
    except ValidationError as e:
        sys.exit(f"Error: {describe_errors(e)}")
    except ConfigError as e:
        sys.exit(f"Error: {e}")


def output_key(stage: str, settings: Settings, shard_id: int) -> str:
    return PIPELINE.output_key(stage, settings, shard_id)


def open_ledger(settings: Settings, store: Store | None = None) -> Ledger:
    return Ledger(store or open_store(settings.output_url, settings), settings, PIPELINE)


def make_app(main: str, settings: Settings) -> Celery:
    """``make_app("services.asr")``: a worker of it reads only the ``asr`` queue, even without
    ``-Q``, and is named ``asr@host``; any other name (the CLI, Flower) knows every queue."""
    from common.queue.config import make_app as _make_app  # the one-process runner needs no Celery

    stage = main.rsplit(".", 1)[-1]
    if stage in PIPELINE:
        return _make_app(main, settings, queues=(stage,),
                         include=(f"{main}.tasks",), node=stage)
    return _make_app(main, settings, queues=STAGES)
