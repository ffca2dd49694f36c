"""The pipeline as the operator commands see it: every stage's spec and settings section loaded,
and the helpers that need them. The order itself is declared in ``services/pipeline.py``;
stages never import either module (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from common.ledger.store import Ledger
from common.settings import Settings
from common.storage import Store, open_store
from services.pipeline import PIPELINE, boot, make_app

__all__ = ["PIPELINE", "STAGES", "PipelineSettings", "Settings", "boot_settings", "make_app",
           "open_ledger", "output_key"]

STAGES: tuple[str, ...] = PIPELINE.names
# Every setting: the generic ones (common/settings.py) and each stage's section
# (services/<stage>/settings.py), from the same ONSEI_* names and ONSEI_CONFIG file. Each entry
# point builds one (a CLI command, ``onsei run``, Flower's app module: :func:`boot_settings`;
# a stage's worker: services/pipeline.py) and passes it down; nothing below an entry point
# reads the environment for settings.
PipelineSettings: type[Settings] = PIPELINE.settings_class


def boot_settings(**overrides: Any) -> Settings:
    """Every section's settings for a process started outside the ``onsei`` command (Flower,
    a test's app module): an invalid value stops it with one line per value."""
    return boot(PipelineSettings, **overrides)


def output_key(stage: str, settings: Settings, shard_id: int) -> str:
    return PIPELINE.output_key(stage, settings, shard_id)


def open_ledger(settings: Settings, store: Store | None = None) -> Ledger:
    return Ledger(store or open_store(settings.output_url, settings), settings, PIPELINE)
