"""Boolean attention masks, True = may attend (chapter 6).

Shape letters: B batch, L length, S source length, T target length.
Masks broadcast against scores ``(B, H, Lq, Lk)``.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """True where the key is a real token: ``(B, L)`` -> ``(B, 1, 1, L)``."""
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, L)


def causal_mask(length: int, device: torch.device | str | None = None) -> Tensor:
    """Lower-triangular ``(L, L)``: position i may attend to positions j <= i."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


def decoder_self_attention_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """Causal AND target padding: ``(B, T)`` -> ``(B, 1, T, T)``."""
    return padding_mask(tgt, pad_id) & causal_mask(tgt.size(1), tgt.device)  # (B, 1, T, T)


def to_pytorch_mask(mask: Tensor) -> Tensor:
    """Convert our convention (True = may attend) to ``nn.MultiheadAttention``'s and
    ``nn.Transformer``'s boolean masks (True = blocked)."""
    return ~mask
