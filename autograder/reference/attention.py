"""Softmax and scaled dot-product attention, written out by hand (chapter 2).

Shape letters: B batch, H heads, L any length, Lq query length, Lk key length,
Dh size of one head (or of the whole model for single-head attention).
Masks are boolean, True = may attend, and broadcast against scores (..., Lq, Lk).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """Numerically stable softmax: ``exp(x - max) / sum(exp(x - max))`` along ``dim``.

    Subtracting the maximum changes nothing mathematically (it cancels in the ratio)
    but keeps ``exp`` from overflowing for large inputs. A slice that is all ``-inf``
    (a fully masked row) gives zeros, not NaN.
    """
    # The shift cancels in the ratio, so no gradient flows through it: detach it.
    x_max = x.detach().amax(dim=dim, keepdim=True)
    # An all -inf slice has max -inf and -inf - (-inf) = NaN: shift such slices by 0.
    x_max = x_max.masked_fill(x_max == float("-inf"), 0.0)
    e = torch.exp(x - x_max)
    # An all -inf slice sums to 0: dividing by the smallest positive number keeps its zeros.
    return e / e.sum(dim=dim, keepdim=True).clamp_min(torch.finfo(e.dtype).tiny)


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(Dh)) V (Vaswani et al., eq. 1), masked as in their section 3.2.3.

    Args:
        q: queries ``(..., Lq, Dh)``.
        k: keys ``(..., Lk, Dh)``.
        v: values ``(..., Lk, Dv)``.
        attn_mask: boolean, True = may attend, broadcastable to ``(..., Lq, Lk)``.
            Masked scores become ``-inf`` before the softmax; a fully masked row gets
            zero weights and a zero output.
        dropout_p: dropout on the weights (only when > 0; the caller passes 0 in eval).

    Returns:
        ``(output (..., Lq, Dv), weights (..., Lq, Lk))``.
    """
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"queries and keys must have the same last dimension Dh, got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(f"keys and values must have the same length Lk, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Lq, Lk)
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool:
            raise TypeError(f"attn_mask must be boolean (True = may attend), got {attn_mask.dtype}")
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = torch.nn.functional.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (..., Lq, Dv), (..., Lq, Lk)


def single_query_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Attention of one query over a sequence (Formal Algorithms, Algorithm 3).

    Shape: q ``(Dh,)``, k ``(Lk, Dh)``, v ``(Lk, Dv)`` -> ``(Dv,)``.
    """
    scores = k @ q / math.sqrt(q.size(-1))  # (Lk,)
    return softmax(scores, dim=-1) @ v  # (Dv,)


def self_attention(
    x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, attn_mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Single-head self-attention with raw weights multiplying on the right.

    Shape: x ``(B, L, D)``, w_q and w_k ``(D, Dh)``, w_v ``(D, Dv)`` ->
    ``(output (B, L, Dv), weights (B, L, L))``.
    """
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, attn_mask)
