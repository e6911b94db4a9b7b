"""Multi-head attention (chapter 4).

Shape letters: B batch, Lq query length, Lk key length, D d_model, H heads,
Dh = D // H. Masks are boolean, True = may attend, broadcastable to (B, H, Lq, Lk).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder.reference.attention import scaled_dot_product_attention


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """``(B, L, D)`` -> ``(B, H, L, Dh)``: heads become a batch axis."""
    b, length, d = x.shape
    if d % num_heads:
        raise ValueError(f"d_model={d} is not divisible by num_heads={num_heads}")
    return x.view(b, length, num_heads, d // num_heads).transpose(1, 2)  # (B, H, L, Dh)


def merge_heads(x: Tensor) -> Tensor:
    """``(B, H, L, Dh)`` -> ``(B, L, H * Dh)``: concatenate the heads."""
    b, h, length, dh = x.shape
    return x.transpose(1, 2).reshape(b, length, h * dh)  # (B, L, D)


@dataclass
class KVCache:
    """Keys and values kept between decoding steps (chapter 8).

    ``static=True`` (cross-attention): keys and values come from the encoder memory,
    are computed at the first step and reused. ``static=False`` (self-attention): each
    step appends the new positions' keys and values.
    """

    static: bool
    k: Tensor | None = None  # (B, H, Lk, Dh)
    v: Tensor | None = None  # (B, H, Lk, Dh)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W_O (Vaswani et al., section 3.2.2).

    Args:
        d_model: model width D.
        num_heads: number of heads H; D must be divisible by H.
        dropout: dropout on the attention weights while training.
        bias: whether the four projections have biases.
        fused: use ``F.scaled_dot_product_attention`` instead of the hand-written math
            (same result; ``attn_weights`` is then not kept).

    Shape:
        query ``(B, Lq, D)``, key and value ``(B, Lk, D)`` -> ``(B, Lq, D)``;
        ``attn_weights`` after a forward pass: ``(B, H, Lq, Lk)``.
    """

    def __init__(
        self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
        fused: bool = False,
    ) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.dropout, self.fused = d_model, num_heads, dropout, fused
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.attn_weights: Tensor | None = None

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
        kv_cache: KVCache | None = None,
    ) -> Tensor:
        if self.fused and kv_cache is None and query is key and key is value:
            # Self-attention: one matrix product for Q, K and V, as nn.MultiheadAttention does.
            weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])  # (3D, D)
            bias = None if self.q_proj.bias is None else torch.cat(
                [self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
            q, k, v = (split_heads(t, self.num_heads) for t in F.linear(query, weight, bias).chunk(3, dim=-1))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                                 dropout_p=self.dropout if self.training else 0.0)
            self.attn_weights = None
            return self.out_proj(merge_heads(out))  # (B, Lq, D)
        q = split_heads(self.q_proj(query), self.num_heads)  # (B, H, Lq, Dh)
        if kv_cache is not None and kv_cache.static and kv_cache.k is not None:
            k, v = kv_cache.k, kv_cache.v
        else:
            k = split_heads(self.k_proj(key), self.num_heads)  # (B, H, Lk, Dh)
            v = split_heads(self.v_proj(value), self.num_heads)  # (B, H, Lk, Dh)
            if kv_cache is not None:
                if not kv_cache.static and kv_cache.k is not None:
                    k = torch.cat([kv_cache.k, k], dim=2)  # (B, H, Lk_past + Lk, Dh)
                    v = torch.cat([kv_cache.v, v], dim=2)
                kv_cache.k, kv_cache.v = k, v
        p = self.dropout if self.training else 0.0
        if self.fused:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)
            self.attn_weights = None
        else:
            out, self.attn_weights = scaled_dot_product_attention(q, k, v, attn_mask, p)
        return self.out_proj(merge_heads(out))  # (B, Lq, D)
