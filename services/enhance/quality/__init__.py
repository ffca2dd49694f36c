"""Quality annotations of restored segments (docs/quality.md).

- :mod:`dnsmos`: DNSMOS P.835 SIG/BAK/OVRL, before and after restoration (ONNX from ``speechmos``);
- :mod:`speaker`: Resemblyzer embedding + consistency of its parts -> ``multi_speaker``;
- :mod:`fidelity`: re-transcription of a sample of restored segments, CER vs the ASR text.

Which annotated segments are dropped, and where, is services/rules/ (the filter rules).

Every scorer takes 16 kHz mono float32 clips and runs batched; heavy imports happen on load.
"""
