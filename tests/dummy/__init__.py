"""A Celery app with the three dummy stages: ``celery -A tests.dummy worker -Q asr`` etc."""

from common.queue.worker import register_stage_task
from services.stages import PIPELINE, boot_settings, make_app
from tests.dummy.stages import DummyAsr, DummyEnhance, DummyTokenize

app = make_app("tests.dummy", boot_settings())
tasks = {s.name: register_stage_task(app, PIPELINE, s.name, s) for s in (DummyAsr, DummyEnhance,
                                                             DummyTokenize)}
