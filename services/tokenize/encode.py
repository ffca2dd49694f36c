"""Batched NeuCodec encoding that yields, per item, the codes the codec gives for it alone.

The library's ``encode_code`` pads every item by ``320 - T % 320`` zeros, extracts w2v-BERT
features per item (normalised over the item's own frames), and runs the semantic model without
a mask, so a batch must share T. Here each item is prepared alone exactly as the library does
(``prepare``: padding and features, done in the reader thread), and a batch of unequal items is
encoded with:

- the semantic model given an attention mask (its convolution is causal and masks padding, its
  attention is masked): valid frames see exactly what they would see alone;
- the SemanticEncoder's three convolutions with the padded frames zeroed after each, as the
  zero padding of an item alone;
- the acoustic encoder per item (policy ``exact``) or on zero-padded audio (``padded``): its
  convolutions and replicate-padded resamplers make the last frames of a padded item differ.
  ``stitched`` runs the padded batch, then re-encodes every item's last ``WINDOW_FRAMES``
  frames of audio alone (equal lengths: one batched call) and replaces its last
  ``TAIL_FRAMES`` frames with those: exact like ``exact``, batched like ``padded``;
- fc_prior and the quantizer, which are per frame; codes trimmed to each item's own count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from services.tokenize.settings import POLICIES

HOP = 320  # 16 kHz samples per 50 Hz code
# The acoustic encoder's reach, measured structurally (float64, one-sample perturbation): a
# sample changes the 17 frames up to it; a window of W frames is exact from its 15th frame on.
TAIL_FRAMES = 18  # frames of a padded item that may differ from alone (one spare)
WINDOW_FRAMES = 40  # tail window re-encoded alone: its last 25 frames are exact


@dataclass
class Prepared:
    """One segment ready for the codec (built in the reader thread, off the model's path)."""

    audio: np.ndarray  # float32 16 kHz, padded like the library (length % 320 == 0)
    features: Any  # torch.Tensor (L, 160) w2v-BERT features of the item alone (neucodec only)
    frames: int  # codes the codec yields for this item alone
    length: int  # samples before the library's padding

    @property
    def samples(self) -> int:
        return int(self.audio.shape[0])


def library_pad(audio: np.ndarray) -> np.ndarray:
    return np.pad(audio, (0, HOP - audio.shape[0] % HOP)).astype(np.float32, copy=False)


def expected_frames(num_samples: int, variant: str) -> int:
    """Codes per item: T // 320 for neucodec, T // 320 + 1 for the distilled codec."""
    return num_samples // HOP + (1 if variant == "distill-neucodec" else 0)


def prepare(model: Any, variant: str, audio16k: np.ndarray) -> Prepared:
    import torch

    padded = library_pad(audio16k)
    if variant != "neucodec":  # the distilled codec is encoded by the library, item by item
        return Prepared(padded, None, expected_frames(audio16k.shape[0], variant),
                        int(audio16k.shape[0]))
    y = torch.from_numpy(padded)[None, :]  # the [1, T] row the library hands the extractor
    feats = model.feature_extractor(y, sampling_rate=16_000, return_tensors="pt").input_features[0]
    frames = min(int(feats.shape[0]), padded.shape[0] // HOP)
    return Prepared(padded, feats, frames, int(audio16k.shape[0]))


def _mask_after(x: Any, lengths: Any) -> Any:
    """Zero frames at or past each item's length; x is (B, C, L)."""
    import torch

    keep = torch.arange(x.shape[-1], device=x.device)[None, :] < lengths[:, None]
    return x * keep[:, None, :].to(x.dtype)


def semantic_encoder_masked(module: Any, x: Any, lengths: Any) -> Any:
    """``SemanticEncoder.forward`` with padded frames zeroed after each convolution.

    Calls the module's own layers in its own order (its first ReLU is in-place and so also
    rewrites the residual branch's input, which is kept as is here).
    """
    h = _mask_after(module.initial_conv(_mask_after(x, lengths)), lengths)
    rb = module.residual_blocks
    r = rb[0](h)  # in-place ReLU: h is now relu(h), as in the library
    r = _mask_after(rb[1](r), lengths)
    r = rb[2](r)
    r = _mask_after(rb[3](r), lengths)
    h = r + h
    return module.final_conv(h)


Codes = list[np.ndarray]  # per item: int codes of its own frame count


@overload
def encode_batch(model: Any, items: list[Prepared], policy: str = ...,
                 return_embeddings: Literal[False] = ...) -> Codes: ...


@overload
def encode_batch(model: Any, items: list[Prepared], policy: str,
                 return_embeddings: Literal[True]) -> tuple[Codes, list[np.ndarray]]: ...


def encode_batch(model: Any, items: list[Prepared], policy: str = "exact",
                 return_embeddings: bool = False) -> Codes | tuple[Codes, list[np.ndarray]]:
    """Codes per item (int arrays of each item's own frame count); with
    ``return_embeddings``, also the codec's pre-quantiser embeddings per item."""
    import torch

    if policy not in POLICIES:
        raise ValueError(f"unknown batching policy {policy!r}; one of {POLICIES}")
    if policy == "library" or items[0].features is None:
        return _encode_library(model, items, return_embeddings)
    dev = model.device
    B = len(items)
    pad_value = float(getattr(model.feature_extractor, "padding_value", 1.0))
    lmax = max(int(it.features.shape[0]) for it in items)
    feats = torch.full((B, lmax, items[0].features.shape[1]), pad_value)
    mask = torch.zeros((B, lmax), dtype=torch.long)
    for i, it in enumerate(items):
        n = int(it.features.shape[0])
        feats[i, :n] = it.features
        mask[i, :n] = 1
    sem_len = torch.tensor([int(it.features.shape[0]) for it in items], device=dev)
    with torch.inference_mode():
        out = model.semantic_model(feats.to(dev), attention_mask=mask.to(dev))
        sem = out.last_hidden_state.transpose(1, 2)
        sem = semantic_encoder_masked(model.SemanticEncoder_module, sem, sem_len)
        acoustic = _acoustic(model, items, policy)  # (B, 1024, frames)
        fmax = max(it.frames for it in items)
        emb = torch.cat([sem[:, :, :fmax], acoustic[:, :, :fmax]], dim=1)
        emb = model.fc_prior(emb.transpose(1, 2)).transpose(1, 2)
        _, codes, _ = model.generator(emb, vq=True)
    flat: np.ndarray = codes[:, 0, :].to("cpu", torch.int64).numpy()
    result = [flat[i, : it.frames].copy() for i, it in enumerate(items)]
    if return_embeddings:
        embs = [emb[i, :, : it.frames].float().cpu().numpy() for i, it in enumerate(items)]
        return result, embs
    return result


def _acoustic(model: Any, items: list[Prepared], policy: str) -> Any:
    import torch

    dev = model.device
    if policy in ("padded", "stitched"):
        tmax = max(it.samples for it in items)
        y = torch.zeros((len(items), 1, tmax))
        for i, it in enumerate(items):
            y[i, 0, : it.samples] = torch.from_numpy(it.audio)
        out = model.CodecEnc(y.to(dev)).transpose(1, 2)
        return _stitch_tails(model, items, out) if policy == "stitched" else out
    outs = [model.CodecEnc(torch.from_numpy(it.audio)[None, None].to(dev)).transpose(1, 2)
            for it in items]
    fmax = max(o.shape[-1] for o in outs)
    return torch.cat([torch.nn.functional.pad(o, (0, fmax - o.shape[-1])) for o in outs])


def _stitch_tails(model: Any, items: list[Prepared], out: Any) -> Any:
    """Replace the frames near each item's end (where padding reached) by an alone encoding."""
    import torch

    dev = model.device
    w = WINDOW_FRAMES * HOP
    long = [i for i, it in enumerate(items) if it.samples >= w]
    if long:
        y = torch.stack([torch.from_numpy(items[i].audio[-w:]) for i in long])[:, None]
        win = model.CodecEnc(y.to(dev)).transpose(1, 2)  # (n, C, WINDOW_FRAMES)
        for j, i in enumerate(long):
            n = items[i].samples // HOP
            out[i, :, n - TAIL_FRAMES:n] = win[j, :, WINDOW_FRAMES - TAIL_FRAMES:]
    for i, it in enumerate(items):
        if it.samples < w:  # short: the whole item alone
            alone = model.CodecEnc(torch.from_numpy(it.audio)[None, None].to(dev))
            out[i, :, : alone.shape[1]] = alone[0].transpose(0, 1)
    return out


def _encode_library(model: Any, items: list[Prepared], return_embeddings: bool
                    ) -> Codes | tuple[Codes, list[np.ndarray]]:
    """One item at a time through the library's own ``encode_code`` (the reference)."""
    import torch

    codes_out: Codes = []
    embs: list[np.ndarray] = []
    captured: list[Any] = []
    hook = None
    if return_embeddings:
        hook = model.generator.quantizer.register_forward_hook(
            lambda _m, args, _o: captured.append(args[0]))
    try:
        with torch.inference_mode():
            for it in items:
                c = model.encode_code(torch.from_numpy(it.audio[: it.length])[None, None])
                got = c[0, 0].to("cpu", torch.int64).numpy()
                if got.shape[0] != it.frames:  # the frame-count contract (docs/tokenize.md)
                    raise RuntimeError(f"codec yielded {got.shape[0]} codes for {it.length} "
                                       f"samples, expected {it.frames}")
                codes_out.append(got)
                if return_embeddings:
                    embs.append(captured.pop().transpose(1, 2)[0, :, : it.frames].float()
                                .cpu().numpy())
    finally:
        if hook is not None:
            hook.remove()
    return (codes_out, embs) if return_embeddings else codes_out
