"""Every ``ONSEI_*`` name and ``ONSEI_CONFIG`` key judged against every settings class the
pipeline has: each stage's section and the corpus steps' (common/setting_names.py says why and
what else may carry the prefix). An operator command's check, before it does anything."""

from __future__ import annotations

from collections.abc import Mapping

from common.setting_names import check_names
from common.settings import Settings


def every_settings_class() -> tuple[type[Settings], ...]:
    """The pipeline's settings (every stage's section) and the corpus steps', which no stage
    joins (``onsei dedup``, ``onsei speakers``)."""
    from services.dedup.settings import DedupSettings
    from services.pipeline import PIPELINE
    from services.speakers.settings import SpeakersSettings

    return PIPELINE.settings_class, DedupSettings, SpeakersSettings


def check_every_name(environ: Mapping[str, str] | None = None) -> None:
    """:class:`common.errors.ConfigError` naming each ``ONSEI_*`` name or config key that is no
    setting, with the closest one."""
    from services.pipeline import PIPELINE

    check_names(every_settings_class(), PIPELINE.names, every_section=True, environ=environ)
