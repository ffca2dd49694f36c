"""The pipeline order, and the helpers that need it: the one place that lists the stages.

Stages never import each other; each owns its spec (``services/<stage>/spec.py``) and this
module strings them together (docs/architecture.md).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from common.ledger.store import Ledger
from common.settings import Settings
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
# (services/<stage>/settings.py), from the same ONSEI_* names and ONSEI_CONFIG file.
PipelineSettings: type[Settings] = PIPELINE.settings_class


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings with every stage's section (read once)."""
    return PipelineSettings()


def output_key(stage: str, settings: Settings, shard_id: int) -> str:
    return PIPELINE.output_key(stage, settings, shard_id)


def open_ledger(settings: Settings, store: Store | None = None) -> Ledger:
    return Ledger(store or open_store(settings.output_url, settings), settings, PIPELINE)


def make_app(main: str, settings: Settings | None = None) -> Celery:
    """``make_app("services.asr")``: a worker of it reads only the ``asr`` queue, even without
    ``-Q``, and is named ``asr@host``; any other name (the CLI, Flower) knows every queue."""
    from common.queue.config import make_app as _make_app  # the one-process runner needs no Celery

    stage = main.rsplit(".", 1)[-1]
    if stage in PIPELINE:
        return _make_app(main, settings or get_settings(), queues=(stage,),
                         include=(f"{main}.tasks",), node=stage)
    return _make_app(main, settings or get_settings(), queues=STAGES)
