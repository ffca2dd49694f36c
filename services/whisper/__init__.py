"""Whisper (faster-whisper) shared by the stages that run it: the ASR stage, and the enhance
stage's fidelity re-transcription (docs/quality.md). Not a stage: any stage may import it, and
it imports no stage (docs/architecture.md)."""
