"""Attention tile by tile, with an online softmax (chapter 10).

Shape letters: B batch, H heads, Lq query length, Lk key length, Dh head width, Lt tile width (keys in one tile).
Masks are boolean, True = may attend, broadcastable to ``(..., Lq, Lk)``.

Chapter 2's softmax subtracts the row's maximum m before ``exp``; any number at least as large
would do for the result, and a smaller one only risks overflow. So the keys can be read in
tiles: keep, for every query row, the largest score seen so far m, the sum l of
``exp(score - m)`` and the weighted sum of values acc. When a tile brings a larger maximum m',
the old l and acc are multiplied by ``exp(m - m')``, which is what they would have been had m'
been subtracted from the start. After the last tile ``acc / l`` is exactly softmax(scores) V.
Only one (Lq, Lt) block of scores exists at a time: the memory grows with the tile, not with
Lq x Lk (FlashAttention, Dao et al., 2022, computes the same thing on a GPU's fast memory).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def online_softmax(x: Tensor, tile: int) -> Tensor:
    """The softmax of the last dimension, read ``tile`` columns at a time with a running maximum
    and sum, then a second pass to normalise. Equals ``reference.softmax(x, -1)``, a fully
    ``-inf`` row giving zeros."""
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)  # (...,) running maximum
    total = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)  # (...,) running sum of exp(x - m)
    for start in range(0, x.size(-1), tile):
        block = x[..., start : start + tile]  # (..., Lt)
        new_m = torch.maximum(m, block.amax(-1))
        safe = new_m.masked_fill(new_m == float("-inf"), 0.0)  # an all -inf row so far: shift by 0
        total = total * torch.exp(m - safe) + torch.exp(block - safe[..., None]).sum(-1)
        m = new_m
    safe = m.masked_fill(m == float("-inf"), 0.0)
    return torch.exp(x - safe[..., None]) / total.clamp_min(torch.finfo(x.dtype).tiny)[..., None]


def tiled_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None, tile: int = 64) -> Tensor:
    """softmax(Q K^T / sqrt(Dh)) V computed over ``tile`` keys at a time (chapter 10).

    Equal to ``reference.scaled_dot_product_attention(q, k, v, attn_mask)[0]``: a fully masked
    row gives zeros, never NaN.

    Shape: q ``(..., Lq, Dh)``, k ``(..., Lk, Dh)``, v ``(..., Lk, Dv)``, attn_mask broadcastable to
    ``(..., Lq, Lk)`` -> ``(..., Lq, Dv)``.
    """
    scale = 1.0 / math.sqrt(q.size(-1))
    rows = q.shape[:-1]  # (..., Lq)
    m = torch.full(rows, float("-inf"), dtype=q.dtype, device=q.device)  # (..., Lq) running maximum
    total = torch.zeros(rows, dtype=q.dtype, device=q.device)  # (..., Lq) running sum of exp(s - m)
    acc = torch.zeros(*rows, v.size(-1), dtype=q.dtype, device=q.device)  # (..., Lq, Dv) running weighted values
    for start in range(0, k.size(-2), tile):
        s = q @ k[..., start : start + tile, :].transpose(-2, -1) * scale  # (..., Lq, Lt)
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask[..., start : start + tile], float("-inf"))
        new_m = torch.maximum(m, s.amax(-1))  # (..., Lq)
        safe = new_m.masked_fill(new_m == float("-inf"), 0.0)  # rows masked so far: shift by 0, exp(-inf) = 0
        rescale = torch.exp(m - safe)  # (..., Lq): what the old sums would have been with the new maximum
        p = torch.exp(s - safe[..., None])  # (..., Lq, Lt)
        total = total * rescale + p.sum(-1)
        acc = acc * rescale[..., None] + p @ v[..., start : start + tile, :]  # (..., Lq, Dv)
        m = new_m
    return acc / total.clamp_min(torch.finfo(q.dtype).tiny)[..., None]  # a fully masked row: 0 / tiny = 0
