"""LayerNorm, the position-wise FFN, encoder and decoder layers and stacks (chapter 7).

Shape letters: B batch, S source length, T target length, L any length, D d_model,
F d_ff. Masks are boolean, True = may attend.

Post-norm (``norm_first=False``, the paper's "Add & Norm"):  x = LN(x + Sublayer(x)).
Pre-norm (``norm_first=True``):                              x = x + Sublayer(LN(x)).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor, nn

from autograder.reference.kvcache import LayerCache
from autograder.reference.multihead import MultiHeadAttention
from autograder.reference.norms import layer_norm


class LayerNorm(nn.Module):
    """Layer normalization (Ba et al., 2016) over the last dimension, with a learned gain and shift.

    The formula is ``norms.layer_norm``; this module holds its ``weight`` (ones) and ``bias``
    (zeros), named as in ``nn.LayerNorm``.
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)


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
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
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
    ``cache`` (decoding only, ``kvcache.LayerCache``): the keys and values of earlier steps;
    y then holds only the new positions.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        self_attn: Callable[..., Tensor] = self.self_attn
        cross_attn: Callable[..., Tensor] = self.cross_attn
        if cache is not None:  # the same attention, reusing the keys and values of earlier steps
            self_attn = functools.partial(cache.self_attn.attend, self.self_attn)
            cross_attn = functools.partial(cache.cross_attn.attend, self.cross_attn)
        if self.norm_first:
            h = self.norm1(y)
            y = y + self.dropout1(self_attn(h, h, h, tgt_mask))
            h = self.norm2(y)
            y = y + self.dropout2(cross_attn(h, memory, memory, memory_mask))
            return y + self.dropout3(self.ff(self.norm3(y)))
        y = self.norm1(y + self.dropout1(self_attn(y, y, y, tgt_mask)))
        y = self.norm2(y + self.dropout2(cross_attn(y, memory, memory, memory_mask)))
        return self.norm3(y + self.dropout3(self.ff(y)))


class _Stack(nn.Module):
    """``num_layers`` layers of one kind; a final LayerNorm only for pre-norm, whose layers
    leave their sum unnormalised (post-norm layers already end in one)."""

    layer_type: type[EncoderLayer] | type[DecoderLayer]

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            self.layer_type(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first) for _ in range(num_layers)
        )
        self.norm = LayerNorm(d_model) if norm_first else None


class Encoder(_Stack):
    """A stack of ``num_layers`` encoder layers; a final LayerNorm only for pre-norm.

    Args: ``num_layers``, then ``EncoderLayer``'s (``d_model``, ``num_heads``, ``d_ff``,
    ``dropout``, ``norm_first``).
    """

    layer_type = EncoderLayer

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x) if self.norm is not None else x


class Decoder(_Stack):
    """A stack of ``num_layers`` decoder layers; a final LayerNorm only for pre-norm.

    Args: ``num_layers``, then ``DecoderLayer``'s (``d_model``, ``num_heads``, ``d_ff``,
    ``dropout``, ``norm_first``).
    """

    layer_type = DecoderLayer

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: list[LayerCache] | None = None,
    ) -> Tensor:
        for i, layer in enumerate(self.layers):
            y = layer(y, memory, tgt_mask, memory_mask, None if cache is None else cache[i])
        return self.norm(y) if self.norm is not None else y
