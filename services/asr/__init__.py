"""ASR stage: language ID and transcription with faster-whisper.

Importing the package imports nothing: ``services.asr.stage`` needs neither Celery nor the model
stack until used; the fleet's app is ``services/asr/celery.py`` (``celery -A services.asr``).
"""
