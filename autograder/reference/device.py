"""Pick the best available device (chapter 8)."""

from __future__ import annotations

import torch


def best_device() -> torch.device:
    """Return ``cuda`` when a CUDA GPU is present, else ``mps`` (Apple), else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
