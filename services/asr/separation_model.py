"""A Demucs source-separation model: its vocals go to the decode (services/asr/separation.py);
or, with ``ONSEI_ASR_SEPARATION_BACKEND=spleeter``, a Spleeter one (services/asr/spleeter.py).

``ONSEI_ASR_SEPARATION_MODEL`` is either one local model file, demucs's own pickled package
(``demucs.states.serialize_model``, e.g. the released ``955717e8-8726e21a.th`` of htdemucs) or
its hub ``.safetensors``, or, given like Sidon's weights (common/models/weights.py), a local
folder, an ``s3://`` prefix or a Hugging Face repo (``adefossez/HTDemucs``) holding a Demucs
*bag* as demucs publishes it: ``<name>.yaml`` (``ONSEI_ASR_SEPARATION_NAME``, default
``htdemucs``) listing its models' signatures, and each model as ``<signature>.safetensors``
(class and arguments in the file's metadata) or, in a local folder, as
``<signature>-<checksum>.th`` (the files of demucs's ``remote/files.txt``; the folder
``demucs.pretrained.get_model(name, repo=folder)`` reads). Loading goes through demucs's own
code (``demucs.hf.load_safetensors_model``, ``demucs.states.load_model``,
``demucs.apply.BagOfModels``), so any model demucs can run loads; it must have a ``vocals``
source. Everything is checked at load, before a shard is taken. A ``.th`` is unpickled as
weights only (common/models/safe_load.py: its model class and tensors, nothing that runs code),
then built as ``load_model`` builds it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.settings import Settings
from services.asr.separation import VOCALS, SeparationModelError


def _hint(spec: str, name: str) -> Callable[[str], str]:
    from common.models.weights import load_hint

    return load_hint("separation model", spec,
                     "ONSEI_ASR_SEPARATION_MODEL is a Demucs model file (demucs's .th, such as "
                     "955717e8-8726e21a.th, or .safetensors) or a folder (local, s3:// prefix, "
                     "or a Hugging Face repo such as adefossez/HTDemucs) holding a Demucs bag: "
                     f"{name}.yaml and its models as <signature>.safetensors or "
                     "<signature>-<checksum>.th; ONSEI_ASR_SEPARATION_NAME names the bag")


def _read_bag(path: Path, hint: Callable[[str], str]) -> tuple[list[str], dict[str, Any]]:
    """(the bag's model signatures, the whole bag definition)."""
    import yaml

    try:
        bag = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise SeparationModelError(hint(f"{path.name} is unreadable: {e}")) from e
    sigs = bag.get("models") if isinstance(bag, dict) else None
    if not isinstance(sigs, list) or not sigs:
        raise SeparationModelError(hint(f"{path.name} lists no models"))
    return [str(s) for s in sigs], bag


def _model_file(d: Path, sig: str) -> Path | None:
    st = d / f"{sig}.safetensors"
    if st.is_file():
        return st
    th = sorted(d.glob(f"{sig}-*.th")) + sorted(d.glob(f"{sig}.th"))
    return th[0] if th else None


# what a Demucs package (``serialize_model``) holds besides tensors and containers: its model
# class and the ``Fraction`` of its segment length
PACKAGE_CLASSES = ("demucs.htdemucs.HTDemucs", "demucs.hdemucs.HDemucs", "demucs.demucs.Demucs",
                   "fractions.Fraction")


def _load_one(path: Path, settings: Settings, hint: Callable[[str], str]) -> Any:
    from common.models.safe_load import UnsafeCheckpoint

    try:
        if path.suffix == ".safetensors":
            from demucs.hf import load_safetensors_model

            return load_safetensors_model(path)
        return _load_package(path, settings, hint)
    except UnsafeCheckpoint as e:
        raise SeparationModelError(str(e)) from e
    except SeparationModelError:
        raise
    except Exception as e:  # any unreadable or mismatched file is the user's to fix
        raise SeparationModelError(hint(f"{path.name} does not load: "
                                        f"{type(e).__name__}: {str(e)[:300]}")) from e


def _load_package(path: Path, settings: Settings, hint: Callable[[str], str]) -> Any:
    """demucs's pickled package (``.th``) read as weights only, then built as demucs's
    ``load_model`` builds it (never through it: it unpickles in full)."""
    from demucs.states import load_model

    from common.models.safe_load import read_checkpoint, resolve

    package, trusted = read_checkpoint(path, PACKAGE_CLASSES, settings.model_trusted_sha256,
                                       hint)
    if not isinstance(package, dict) or not {"klass", "args", "kwargs", "state"} <= package.keys():
        raise SeparationModelError(hint(f"{path.name} is not a Demucs package (klass, args, "
                                        "kwargs, state)"))
    if not trusted:
        if package["klass"] not in resolve(PACKAGE_CLASSES[:-1]):
            raise SeparationModelError(hint(f"{path.name} names {package['klass']!r}, not a "
                                            "Demucs model class"))
        if isinstance(package["state"], dict) and package["state"].get("__quantized"):
            raise SeparationModelError(hint(
                f"{path.name} is quantized (diffq), whose state is read by unpickling: give the "
                "model's .safetensors instead"))
    return load_model(package)  # type: ignore[no-untyped-call]  # a dict: nothing unpickled


def _load_bag(spec: str, name: str, settings: Settings,
              hint: Callable[[str], str]) -> tuple[list[Any], dict[str, Any]]:
    """(the models of the bag ``name`` at ``spec``, its definition)."""
    from common.models.weights import WeightsUnavailable, resolve_model_dir

    head = [f"{name}.yaml"]
    try:
        d = resolve_model_dir(spec, head, settings, hint)
        sigs, bag_yaml = _read_bag(d / head[0], hint)
        if any(_model_file(d, s) is None for s in sigs):  # remote: fetch the models as well
            d = resolve_model_dir(spec, head + [f"{s}.safetensors" for s in sigs], settings, hint)
    except WeightsUnavailable as e:
        raise SeparationModelError(str(e)) from e
    files = [_model_file(d, s) for s in sigs]
    missing = [s for s, f in zip(sigs, files) if f is None]
    if missing:
        raise SeparationModelError(hint(f"{d} lacks the models {', '.join(missing)}"))
    return [_load_one(f, settings, hint) for f in files if f is not None], bag_yaml


def load_separation_model(spec: str, name: str, settings: Settings,
                          backend: str = "demucs") -> Any:
    """The model file or bag ``name`` at ``spec`` as a ``demucs.apply.BagOfModels`` in eval
    mode (one file: a bag of that model alone, so both separate alike); with ``backend``
    ``spleeter``, the Spleeter checkpoint at ``spec`` (services/asr/spleeter.py)."""
    if backend == "spleeter":
        try:
            from services.asr.spleeter import load_spleeter
        except ImportError as e:
            raise SeparationModelError(f"cannot load the Spleeter model {spec!r}: torch is not "
                                       f"installed ({e}): pip install "
                                       "'onsei[asr,asr-separation]'") from e
        return load_spleeter(spec, settings)
    if backend != "demucs":
        raise SeparationModelError(f"unknown separation backend {backend!r}: "
                                   "ONSEI_ASR_SEPARATION_BACKEND is demucs or spleeter")
    hint = _hint(spec, name)
    try:
        from demucs.apply import BagOfModels
    except ImportError as e:  # the asr image carries CTranslate2, not torch and demucs
        raise SeparationModelError(hint(f"demucs is not installed ({e}): pip install "
                                        "'onsei[asr,asr-separation]'")) from e
    from common.models.weights import WeightsUnavailable, local_file

    models: list[Any]
    bag_yaml: dict[str, Any]
    try:
        one = local_file(spec, hint)
    except WeightsUnavailable as e:
        raise SeparationModelError(str(e)) from e
    folder = Path(spec.removeprefix("file://")).expanduser()
    if one is not None:
        models, bag_yaml = [_load_one(one, settings, hint)], {}
    elif (folder / "model.index").is_file() and not (folder / f"{name}.yaml").is_file():
        raise SeparationModelError(hint("it holds a TF checkpoint (model.index), as Spleeter's "
                                        "are: set ONSEI_ASR_SEPARATION_BACKEND=spleeter"))
    else:
        models, bag_yaml = _load_bag(spec, name, settings, hint)
    try:
        bag = BagOfModels(models, bag_yaml.get("weights"), bag_yaml.get("segment"))
    except AssertionError as e:
        raise SeparationModelError(hint("its models differ in sources, rate or channels")) from e
    if VOCALS not in bag.sources:
        raise SeparationModelError(hint(f"its sources are {bag.sources}, with no {VOCALS!r}"))
    return bag.eval()
