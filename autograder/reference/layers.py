"""LayerNorm, the position-wise FFN, encoder and decoder layers and stacks (chapter 7).

Shape letters: B batch, S source length, T target length, L any length, D d_model,
F d_ff. Masks are boolean, True = may attend.

Post-norm (``norm_first=False``, the paper's "Add & Norm"):  x = LN(x + Sublayer(x)).
Pre-norm (``norm_first=True``):                              x = x + Sublayer(LN(x)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder.reference.multihead import KVCache, MultiHeadAttention


class LayerNorm(nn.Module):
    """Layer normalization (Ba et al., 2016) over the last dimension, by hand.

    y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance
    (divide by D, not D - 1) and eps inside the square root, as ``nn.LayerNorm``.
    ``fused=True`` calls PyTorch's kernel ``F.layer_norm`` instead (same result, faster).
    """

    def __init__(self, d_model: int, eps: float = 1e-5, fused: bool = False) -> None:
        super().__init__()
        self.eps, self.fused = eps, fused
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        if self.fused:
            return F.layer_norm(x, (x.size(-1),), self.weight, self.bias, self.eps)
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)  # biased: divide by D
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to every position alone.

    Shape: ``(B, L, D)`` -> ``(B, L, F)`` -> ``(B, L, D)``.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in a residual connection and a LayerNorm.

    Shape: x ``(B, S, D)``, src_mask broadcastable to ``(B, H, S, S)`` -> ``(B, S, D)``.
    """

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
        norm_first: bool = False, fused: bool = False,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model, fused=fused)
        self.norm2 = LayerNorm(d_model, fused=fused)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.self_attn(h, h, h, src_mask))
            return x + self.dropout2(self.ff(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, src_mask)))
        return self.norm2(x + self.dropout2(self.ff(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, then FFN.

    Cross-attention takes its queries from the decoder and its keys and values from
    the encoder output (``memory``).

    Shape: y ``(B, T, D)``, memory ``(B, S, D)``, tgt_mask broadcastable to
    ``(B, H, T, T)``, memory_mask to ``(B, H, T, S)`` -> ``(B, T, D)``.
    ``cache`` (decoding only): ``{"self": KVCache, "cross": KVCache}``; y then holds
    only the new positions.
    """

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
        norm_first: bool = False, fused: bool = False,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model, fused=fused)
        self.norm2 = LayerNorm(d_model, fused=fused)
        self.norm3 = LayerNorm(d_model, fused=fused)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self, y: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None, cache: dict[str, KVCache] | None = None,
    ) -> Tensor:
        self_cache = cache["self"] if cache is not None else None
        cross_cache = cache["cross"] if cache is not None else None
        if self.norm_first:
            h = self.norm1(y)
            y = y + self.dropout1(self.self_attn(h, h, h, tgt_mask, self_cache))
            h = self.norm2(y)
            y = y + self.dropout2(self.cross_attn(h, memory, memory, memory_mask, cross_cache))
            return y + self.dropout3(self.ff(self.norm3(y)))
        y = self.norm1(y + self.dropout1(self.self_attn(y, y, y, tgt_mask, self_cache)))
        y = self.norm2(y + self.dropout2(self.cross_attn(y, memory, memory, memory_mask, cross_cache)))
        return self.norm3(y + self.dropout3(self.ff(y)))


class Encoder(nn.Module):
    """A stack of ``num_layers`` encoder layers; a final LayerNorm only for pre-norm."""

    def __init__(
        self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
        norm_first: bool = False, fused: bool = False,
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first, fused) for _ in range(num_layers)
        )
        self.norm = LayerNorm(d_model, fused=fused) if norm_first else None

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x) if self.norm is not None else x


class Decoder(nn.Module):
    """A stack of ``num_layers`` decoder layers; a final LayerNorm only for pre-norm."""

    def __init__(
        self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
        norm_first: bool = False, fused: bool = False,
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first, fused) for _ in range(num_layers)
        )
        self.norm = LayerNorm(d_model, fused=fused) if norm_first else None

    def forward(
        self, y: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None, cache: list[dict[str, KVCache]] | None = None,
    ) -> Tensor:
        for i, layer in enumerate(self.layers):
            y = layer(y, memory, tgt_mask, memory_mask, None if cache is None else cache[i])
        return self.norm(y) if self.norm is not None else y
