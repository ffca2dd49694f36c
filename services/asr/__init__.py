"""ASR stage: language ID and transcription with faster-whisper (imported lazily: no torch)."""

from services.asr.app import app
from services.asr import tasks  # noqa: F401  (registers the task)

__all__ = ["app"]
