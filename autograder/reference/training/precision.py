"""Mixed precision for training: which autocast dtype ``--amp`` means on a device, and the
autocast context and GradScaler that go with it (appendix, "Mixed precision"). One place decides
it: ``train`` and the training command ask here."""

from __future__ import annotations

import contextlib

import torch

AMP_MODES = ("none", "bf16", "fp16", "auto")
# "auto" on CUDA: low precision only for a captured step of a model at least this wide. On one H100
# (benchmarks/results/h100-2026-11-25.json, torch 2.11) bf16 made every eager step slower (d 64:
# 34.3 vs 22.4 ms; d 512: 88.4 vs 62.0 ms: launch-bound, and autocast adds cast kernels) and the
# graphed d 64 step too (3.49 vs 3.30 ms); only the graphed d 512 step gained (21.1 vs 41.7 ms).
AUTO_LOW_PRECISION_MIN_D_MODEL = 512


def amp_dtype(
    device: torch.device,
    amp: str | bool,
    *,
    d_model: int | None = None,
    captured: bool = False,
) -> torch.dtype | None:
    """The autocast dtype that ``amp`` means on ``device`` (None: plain float32).

    ``"auto"`` picks what was measured faster: on CUDA, bf16 (fp16 without bf16) only for a
    captured step (a CUDA graph or a compiled model) of a model at least
    ``AUTO_LOW_PRECISION_MIN_D_MODEL`` wide; float32 otherwise, and always on a CPU or MPS.
    ``True`` and ``False`` are read as ``"auto"`` and ``"none"``.
    """
    mode = {True: "auto", False: "none"}.get(amp, amp) if isinstance(amp, bool) else amp
    if mode not in AMP_MODES:
        raise ValueError(f"amp must be one of {', '.join(AMP_MODES)}, got {amp!r}")
    if mode == "auto":
        big = d_model is not None and d_model >= AUTO_LOW_PRECISION_MIN_D_MODEL
        if device.type != "cuda" or not (captured and big):
            return None  # the step is bound by launching kernels: casts would only add more of them
        mode = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"none": None, "bf16": torch.bfloat16, "fp16": torch.float16}[mode]


def precision_name(dtype: torch.dtype | None) -> str:
    """What a checkpoint records: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (``amp_dtype``'s answer)."""
    return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def autocast_for(device: torch.device, amp: str | bool, **size):
    """``(context, scaler)``: autocast for ``device`` in the dtype ``amp`` asks for, and a
    GradScaler for float16 (bfloat16 keeps float32's exponent range and needs none).

    The same code serves every device: only ``device.type`` changes between the CPU and CUDA.
    ``size``: ``d_model`` and ``captured``, for ``"auto"`` (see ``amp_dtype``).
    """
    dtype = amp_dtype(device, amp, **size)
    if dtype is None:
        return contextlib.nullcontext(), None
    if not torch.amp.is_autocast_available(device.type):
        raise ValueError(f"this torch ({torch.__version__}) has no autocast for {device.type}")
    scaler = torch.amp.GradScaler(device.type) if dtype == torch.float16 else None
    return torch.autocast(device.type, dtype=dtype), scaler
