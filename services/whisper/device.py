"""Device and compute type for CTranslate2: ``auto`` means CUDA when ctranslate2 sees a GPU,
float16 there and int8 on CPU (int8 is the fast path on CPUs; float16 halves GPU memory)."""

from __future__ import annotations

from common.models.device import resolve_device as common_resolve_device


def cuda_available() -> bool:
    import ctranslate2

    try:
        return ctranslate2.get_cuda_device_count() > 0
    except Exception:  # noqa: BLE001 - a CPU-only build raises rather than answering 0
        return False


def resolve_device(device: str) -> str:
    return common_resolve_device(device, "ONSEI_ASR_DEVICE", cuda_available, indexed=False)


def resolve_compute_type(compute_type: str, device: str) -> str:
    compute_type = (compute_type or "auto").lower()
    if compute_type == "auto":
        return "float16" if device == "cuda" else "int8"
    return compute_type
