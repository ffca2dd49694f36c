"""What the steps of one shard are made from (``chain.py``: each step's ``make``): the stage's
settings, its loaded models and the totals they count into."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from common.models.clock import ModelClock
from services.enhance.tally import QualityTally

if TYPE_CHECKING:
    from services.dedup.spectrum import Powers
    from services.enhance.backend import Backend
    from services.enhance.chunking import ChunkGeometry
    from services.enhance.quality.annotate import Annotator
    from services.enhance.settings import EnhanceSettings


@dataclass
class StepContext:
    settings: EnhanceSettings
    in_rate: int  # the input audio's rate (the model's)
    scratch: Path  # the shard's scratch (what a step spills to disk goes there)
    annotator: Annotator | None = None  # None: annotations off
    signature_powers: Powers | None = None
    backend: Backend | None = None  # the restoration model
    geometry: ChunkGeometry | None = None  # how segments are cut into its chunks
    clock: ModelClock = field(default_factory=ModelClock)  # the stage's: model seconds
    tally: QualityTally = field(default_factory=QualityTally)
