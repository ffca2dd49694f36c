"""ASR stage: language ID and transcription with faster-whisper (imported lazily: no torch)."""

from services.asr import tasks  # noqa: F401  (registers the task)
from services.asr.app import app

__all__ = ["app"]
