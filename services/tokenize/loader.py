"""Load a NeuCodec model from a self-sufficient directory, strictly, without touching the hub.

The library's constructor downloads its semantic model (``facebook/w2v-bert-2.0`` or
``ntu-spml/distilhubert``) and feature extractor from the hub, and ``_from_pretrained`` loads the
checkpoint with ``strict=False``. Here the constructor's two ``from_pretrained`` names are
replaced, for the duration of the construction, by builders from the configs in the model
directory (or the known configs of the released models), and the checkpoint's key set is
compared with the model's: a missing or unexpected key is an error naming the keys.

A model directory holds ``pytorch_model.bin`` (or ``model.safetensors``), optionally
``semantic_config.json`` and ``preprocessor_config.json``; when the checkpoint carries no
semantic weights, ``semantic_model/`` (a ``save_pretrained`` directory) must hold them.
``codec_config.json`` (optional, absent from the released models) sizes the library's own parts
within their contract: ``{"CodecEncoder": {"ngf": 4}, "CodecDecoderVocos": {"depth": 1}}``
(the acoustic encoder's width: its strides, dilations and output size stay; the decoder's depth:
encoding never runs it). Random-weight test models use it to stay small.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.errors import ModelUnavailable
from common.models.device import resolve_device, torch_cuda_available
from services.tokenize.known_configs import (
    HUB_IDS,
    SEMANTIC_HUB_IDS,
    known_preprocessor_config,
    known_semantic_config,
)

# Keys the library itself drops from the released checkpoints (decoder-side extras).
IGNORED_KEY_PARTS: dict[str, tuple[str, ...]] = {
    "neucodec": ("fc_post_s", "SemanticDecoder"),
    "distill-neucodec": (),
}
SEMANTIC_LAYERS_USED = 16  # encode_code reads hidden_states[16] of w2v-BERT 2.0
CODEC_CONFIG = "codec_config.json"
# The constructor arguments codec_config.json may set, per class the library builds: only sizes
# that leave the codes' contract alone (hop, receptive field, embedding widths).
SIZE_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "neucodec": {"CodecEncoder": ("ngf",), "CodecDecoderVocos": ("depth",)},
    "distill-neucodec": {"CodecDecoderVocos": ("depth",)},
}
_construct_lock = threading.Lock()


class ModelLoadError(ModelUnavailable):
    """The model cannot be loaded as configured; the message says what to do."""


class CheckpointError(ModelLoadError):
    """The checkpoint does not cover the model exactly (partial or wrong checkpoint)."""

    def __init__(self, missing: list[str], unexpected: list[str], path: Path,
                 mismatched: list[str] | None = None) -> None:
        self.missing = missing
        self.unexpected = unexpected
        self.mismatched = mismatched or []  # "key: checkpoint shape != model shape"

        def show(keys: list[str]) -> str:
            head = ", ".join(keys[:12])
            return head + (f", ... ({len(keys)} in all)" if len(keys) > 12 else "")

        parts = []
        if missing:
            parts.append(f"missing {len(missing)} keys: {show(missing)}")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)} keys: {show(unexpected)}")
        if self.mismatched:
            parts.append(f"{len(self.mismatched)} keys of another shape: {show(self.mismatched)}"
                         f" (a model of another size: its {CODEC_CONFIG} must come with it)")
        super().__init__(f"checkpoint {path} does not match the model: " + "; ".join(parts))


@dataclass
class LoadedCodec:
    model: Any  # NeuCodec | DistillNeuCodec, eval mode, on ``device``
    variant: str  # neucodec | distill-neucodec
    directory: Path
    device: str
    checkpoint_bytes: int
    semantic_layers: int
    info: dict[str, Any] = field(default_factory=dict)


def checkpoint_file(directory: Path) -> Path:
    for name in ("pytorch_model.bin", "model.safetensors"):
        p = directory / name
        if p.is_file():
            return p
    raise ModelLoadError(
        f"no pytorch_model.bin or model.safetensors in {directory}: point "
        "ONSEI_TOKENIZE_NEUCODEC_MODEL at a NeuCodec model directory, an s3:// prefix holding "
        "one, or a hub id")


def read_state_dict(path: Path) -> dict[str, Any]:
    import torch

    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    try:
        sd = torch.load(path, map_location="cpu", weights_only=True)  # no pickled code
    except Exception as e:
        raise ModelLoadError(f"cannot read checkpoint {path}: {type(e).__name__}: {e}") from e
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict):
        raise ModelLoadError(f"checkpoint {path} is not a state dict")
    return sd


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _semantic_builder(directory: Path, variant: str, carries_semantic: bool
                      ) -> Callable[..., Any]:
    """A stand-in for ``<SemanticModel>.from_pretrained`` that never reaches the hub."""
    from transformers import AutoConfig, AutoModel

    def build(_name: str, **kwargs: Any) -> Any:
        if not carries_semantic:
            sub = directory / "semantic_model"
            if not sub.is_dir():
                raise ModelLoadError(
                    f"the checkpoint in {directory} carries no semantic model weights and "
                    f"{sub} is absent: save {SEMANTIC_HUB_IDS[variant]} there "
                    "(save_pretrained) or use a checkpoint that includes them")
            return AutoModel.from_pretrained(str(sub), local_files_only=True, **kwargs)
        cfg_dict = _read_json(directory / "semantic_config.json") or known_semantic_config(variant)
        cfg = AutoConfig.for_model(**cfg_dict)
        for k, v in kwargs.items():
            setattr(cfg, k, v)
        return AutoModel.from_config(cfg)  # type: ignore[no-untyped-call]  # untyped upstream

    return build


def _feature_extractor_builder(directory: Path, variant: str) -> Callable[..., Any]:
    import transformers

    def build(_name: str, **_kwargs: Any) -> Any:
        cfg = dict(_read_json(directory / "preprocessor_config.json")
                   or known_preprocessor_config(variant))
        cls = getattr(transformers, cfg.pop("feature_extractor_type"))
        cfg.pop("processor_class", None)
        return cls(**cfg)

    return build


def codec_sizes(directory: Path, variant: str) -> dict[str, dict[str, Any]]:
    """``codec_config.json``'s constructor arguments per library class, checked against
    ``SIZE_KEYS`` (empty without the file: the released sizes)."""
    try:
        cfg = _read_json(directory / CODEC_CONFIG) or {}
    except ValueError as e:
        raise ModelLoadError(f"{directory / CODEC_CONFIG} is not JSON: {e}") from e
    if not isinstance(cfg, dict):
        raise ModelLoadError(f"{directory / CODEC_CONFIG} is not a JSON object")
    allowed = SIZE_KEYS[variant]
    for part, kwargs in cfg.items():
        if part not in allowed or not isinstance(kwargs, dict) or not set(kwargs) <= set(
                allowed[part]):
            raise ModelLoadError(
                f"{directory / CODEC_CONFIG}: {part!r}: {kwargs!r} is not a size this loader "
                f"sets; {variant} allows {{{', '.join(f'{p}: {k}' for p, k in allowed.items())}}}")
    return cfg


@contextlib.contextmanager
def sized_parts(sizes: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Within the block, ``neucodec.model`` builds its parts with these constructor
    arguments (``codec_sizes``)."""
    from unittest import mock

    import neucodec.model as nm

    with contextlib.ExitStack() as stack:
        for part, kwargs in sizes.items():
            stack.enter_context(mock.patch.object(
                nm, part, functools.partial(getattr(nm, part), **kwargs)))
        yield


class _Shim:
    """Replaces a class name in ``neucodec.model`` during construction: only from_pretrained."""

    def __init__(self, build: Callable[..., Any]) -> None:
        self.from_pretrained = build


def construct(directory: Path, variant: str, carries_semantic: bool) -> Any:
    """The library's model class, built offline (weights uninitialised: the checkpoint fills
    them)."""
    from unittest import mock

    import neucodec.model as nm
    from transformers.initialization import no_init_weights

    sem_name = "Wav2Vec2BertModel" if variant == "neucodec" else "HubertModel"
    cls = nm.NeuCodec if variant == "neucodec" else nm.DistillNeuCodec
    sizes = codec_sizes(directory, variant)
    with _construct_lock, sized_parts(sizes), \
            mock.patch.object(nm, sem_name, _Shim(_semantic_builder(directory, variant,
                                                                     carries_semantic))), \
            mock.patch.object(nm, "AutoFeatureExtractor",
                              _Shim(_feature_extractor_builder(directory, variant))):
        if carries_semantic:
            with no_init_weights():  # random init is wasted work: every weight is loaded next
                return cls(24_000, 480)
        return cls(24_000, 480)


def check_keys(model: Any, state: dict[str, Any], path: Path, carries_semantic: bool) -> None:
    """Key sets equal and, where the checkpoint holds tensors, their shapes too (a checkpoint of
    another size has the same keys)."""
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if not carries_semantic:  # those came from semantic_model/ through from_pretrained
        shapes = {k: v for k, v in shapes.items() if not k.startswith("semantic_model.")}
    got = set(state)
    missing = sorted(shapes.keys() - got)
    unexpected = sorted(got - shapes.keys())
    mismatched = [f"{k}: {tuple(state[k].shape)} != {shapes[k]}"
                  for k in sorted(got & shapes.keys())
                  if hasattr(state[k], "shape") and tuple(state[k].shape) != shapes[k]]
    if missing or unexpected or mismatched:
        raise CheckpointError(missing, unexpected, path, mismatched)


def trim_semantic_layers(model: Any, variant: str) -> int:
    """Drop w2v-BERT layers past the 16th: encode_code reads hidden_states[16] only."""
    if variant != "neucodec":
        return len(model.semantic_model.encoder.layers)
    layers = model.semantic_model.encoder.layers
    if len(layers) < SEMANTIC_LAYERS_USED:
        raise ModelLoadError(f"semantic model has {len(layers)} layers; "
                             f"NeuCodec needs at least {SEMANTIC_LAYERS_USED}")
    model.semantic_model.encoder.layers = layers[:SEMANTIC_LAYERS_USED]
    model.semantic_model.config.num_hidden_layers = SEMANTIC_LAYERS_USED
    return SEMANTIC_LAYERS_USED


_LAYER_KEY = re.compile(r"^semantic_model\.encoder\.layers\.(\d+)\.")


def _unused_layer(key: str) -> bool:
    m = _LAYER_KEY.match(key)
    return m is not None and int(m.group(1)) >= SEMANTIC_LAYERS_USED


def load_codec(directory: Path, variant: str, device: str = "auto",
               trim: bool = True) -> LoadedCodec:
    """Build, load strictly, check keys, move to ``device``, eval mode.

    With ``trim`` (the default), w2v-BERT layers past the 16th are dropped before the key
    check, so a checkpoint may carry 16 or all 24 of them.
    """
    if variant not in IGNORED_KEY_PARTS:
        raise ModelLoadError(f"unknown tokenizer {variant!r}: use neucodec or distill-neucodec")
    path = checkpoint_file(directory)
    state = read_state_dict(path)
    drop = IGNORED_KEY_PARTS[variant]
    state = {k: v for k, v in state.items() if not any(p in k for p in drop)}
    carries_semantic = any(k.startswith("semantic_model.") for k in state)
    model = construct(directory, variant, carries_semantic)
    layers = trim_semantic_layers(model, variant) if trim else len(
        model.semantic_model.encoder.layers)
    if trim and variant == "neucodec":  # weights of layers never run are neither needed nor used
        state = {k: v for k, v in state.items() if not _unused_layer(k)}
    check_keys(model, state, path, carries_semantic)
    model.load_state_dict(state, strict=carries_semantic)
    del state
    dev = resolve_device(device, "ONSEI_TOKENIZE_DEVICE", torch_cuda_available)
    model = model.to(dev).eval()
    return LoadedCodec(model=model, variant=variant, directory=directory, device=dev,
                       checkpoint_bytes=path.stat().st_size, semantic_layers=layers,
                       info={"hub_id": HUB_IDS.get(variant)})
