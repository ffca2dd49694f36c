"""Model checkpoints read without running code: a pickled checkpoint (``torch.save``: Demucs's
``.th``, a pyannote ``pytorch_model.bin``) is unpickled by torch's weights-only unpickler, which
builds tensors, containers and the few classes a loader names (:func:`read_checkpoint`'s
``allowed``) and refuses any other object, so a crafted file cannot call ``os.system`` or
write a file on load. safetensors, TorchScript archives, ONNX and CTranslate2 files hold no
pickled objects at all.

A checkpoint that needs more (a class no loader names) is refused with its sha256 and what it
holds; ``ONSEI_MODEL_TRUSTED_SHA256`` lists the sha256 of files that may then be unpickled in
full, for a file the operator made or trusts. The bytes are read once, hashed and unpickled
from memory, so the file cannot change between the check and the load.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from common.errors import ModelUnavailable

log = logging.getLogger(__name__)

SETTING = "ONSEI_MODEL_TRUSTED_SHA256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class UnsafeCheckpoint(ModelUnavailable):
    """A checkpoint that would unpickle objects no loader allows."""


def trusted_hashes(value: str) -> frozenset[str]:
    """The sha256 the setting lists (comma- or space-separated); ``ValueError`` otherwise."""
    out = set()
    for item in re.split(r"[,\s]+", value.strip().lower()):
        if not item:
            continue
        if not _SHA256.fullmatch(item):
            raise ValueError(f"{item[:80]!r} is not a sha256 (64 hex digits)")
        out.add(item)
    return frozenset(out)


def resolve(names: Iterable[str]) -> list[Any]:
    """The objects of dotted names (``fractions.Fraction``); a name whose module is not
    installed is skipped (a checkpoint that needs it is refused, not loaded)."""
    out = []
    for name in names:
        module, _, attr = name.rpartition(".")
        try:
            out.append(getattr(importlib.import_module(module), attr))
        except (ImportError, AttributeError):
            continue
    return out


def read_checkpoint(path: Path, allowed: Iterable[str], trusted: str,
                    hint: Callable[[str], str]) -> tuple[Any, bool]:
    """``(what path holds, whether it was unpickled in full)``: weights only, with the classes
    ``allowed`` names, unless the file's sha256 is in ``trusted`` (the setting's value)."""
    import torch

    try:
        data = path.read_bytes()
    except OSError as e:
        raise UnsafeCheckpoint(hint(f"{path} cannot be read: {e}")) from e
    sha = hashlib.sha256(data).hexdigest()
    if sha in trusted_hashes(trusted):
        log.warning("%s (sha256 %s) unpickled in full: %s trusts it", path, sha, SETTING)
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False), True
    try:
        with torch.serialization.safe_globals(resolve(allowed)):
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True), False
    except Exception as e:  # what a refused file holds is said below
        if "weights_only" not in str(e).lower() and "unpickl" not in type(e).__name__.lower():
            raise
        extra = _unsafe_globals(data, allowed)
        if not extra:  # not a pickle at all, or a broken one: the caller's "does not load"
            raise
        raise UnsafeCheckpoint(hint(
            f"{path.name} holds objects other than tensors ({', '.join(extra[:6])}), which "
            "could run code when unpickled, so it was not "
            f"loaded. If you made or trust this file, add its sha256 to {SETTING} "
            f"({SETTING}={sha}); better, give its weights as .safetensors")) from None


def _unsafe_globals(data: bytes, allowed: Iterable[str]) -> list[str]:
    import torch

    try:
        found = torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    except Exception:  # noqa: BLE001 - an old (non-zip) or broken file: nothing to list
        return []
    ok = set(allowed)
    return [g for g in found if g not in ok]
