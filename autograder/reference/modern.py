"""The parts of today's block: RMSNorm, SwiGLU, grouped-query attention with a KV cache (chapter 10).

Shape letters: B batch, L length, D d_model, F d_ff, H query heads, G key/value heads (H is a
multiple of G), Dh head width, P tokens already in the cache, Lq new tokens.
Masks are boolean, True = may attend. Raw weights multiply on the right (``x @ W``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder.reference.attention import scaled_dot_product_attention
from autograder.reference.rope import apply_rope


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """RMSNorm over the last dimension (Zhang and Sennrich, 2019): ``x / sqrt(mean(x^2) + eps) * weight``.

    LayerNorm without the mean: no centring and no bias. A row is divided by its root mean
    square; ``eps`` sits inside the root, as in ``torch.nn.RMSNorm``.

    Shape: x ``(..., D)``, weight ``(D,)`` -> the shape and dtype of ``x``.
    """
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


class RMSNorm(nn.Module):
    """The module form of ``rms_norm``, with a learned gain ``weight`` (ones at the start)."""

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.weight, self.eps)


def swiglu_hidden(d_model: int, multiple_of: int = 8) -> int:
    """The hidden width of a SwiGLU FFN with the parameters of a ReLU FFN of width 4D.

    A ReLU FFN has two matrices, ``2 * D * 4D``; SwiGLU has three, ``3 * D * F``: equal when
    F = 2/3 * 4D = 8D/3, rounded up to a multiple of ``multiple_of`` (Llama rounds to 256)."""
    hidden = math.ceil(8 * d_model / 3)
    return multiple_of * math.ceil(hidden / multiple_of)


def swiglu(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """SwiGLU feed-forward (Shazeer, 2020): ``(silu(x W_gate) * (x W_up)) W_down``.

    silu(z) = z * sigmoid(z). The gate decides, feature by feature, how much of the linear
    branch passes. No biases.

    Shape: x ``(..., D)``, w_gate and w_up ``(D, F)``, w_down ``(F, D)`` -> ``(..., D)``.
    """
    return (F.silu(x @ w_gate) * (x @ w_up)) @ w_down  # (..., F) -> (..., D)


class SwiGLU(nn.Module):
    """SwiGLU as a module; ``nn.Linear`` stores the transposes of ``swiglu``'s raw weights."""

    def __init__(self, d_model: int, d_ff: int | None = None) -> None:
        super().__init__()
        d_ff = d_ff or swiglu_hidden(d_model)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def grouped_query_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None) -> Tensor:
    """Attention where H query heads share G key/value heads (Ainslie et al., 2023).

    Query head h reads key/value head ``h // (H / G)``: consecutive query heads form a group,
    as in ``F.scaled_dot_product_attention(..., enable_gqa=True)``. G = H is multi-head
    attention, G = 1 multi-query attention (Shazeer, 2019).

    Shape: q ``(B, H, Lq, Dh)``, k and v ``(B, G, Lk, Dh)``, attn_mask broadcastable to
    ``(B, H, Lq, Lk)`` -> ``(B, H, Lq, Dh)``.
    """
    heads, groups = q.size(1), k.size(1)
    if heads % groups:
        raise ValueError(f"the query heads H={heads} must be a multiple of the key/value heads G={groups}")
    k = k.repeat_interleave(heads // groups, dim=1)  # (B, H, Lk, Dh): head h gets group h // (H/G)
    v = v.repeat_interleave(heads // groups, dim=1)  # (B, H, Lk, Dh)
    return scaled_dot_product_attention(q, k, v, attn_mask)[0]  # (B, H, Lq, Dh)


def attend_with_cache(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cache_k: Tensor,
    cache_v: Tensor,
    base: float = 10000.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """One decoding step of grouped-query attention with RoPE and a KV cache.

    The cache holds the keys (already rotated) and values of the P tokens before; the Lq new
    tokens sit at positions P .. P + Lq - 1. Their queries and keys are rotated by those
    positions, their keys and values appended to the cache, and each new query attends to the
    whole cache and to the new tokens up to itself (causal). Values are never rotated.

    Shape: q ``(B, H, Lq, Dh)``; k, v ``(B, G, Lq, Dh)``; cache_k, cache_v ``(B, G, P, Dh)`` (P may
    be 0) -> ``(output (B, H, Lq, Dh), cache_k (B, G, P + Lq, Dh), cache_v (B, G, P + Lq, Dh))``.
    """
    past, new = cache_k.size(2), q.size(2)
    positions = torch.arange(past, past + new, device=q.device)  # (Lq,): the new tokens' positions
    cache_k = torch.cat([cache_k, apply_rope(k, positions, base)], dim=2)  # (B, G, P + Lq, Dh)
    cache_v = torch.cat([cache_v, v], dim=2)  # (B, G, P + Lq, Dh)
    allowed = torch.ones(new, past + new, dtype=torch.bool, device=q.device).tril(diagonal=past)  # (Lq, P + Lq)
    out = grouped_query_attention(apply_rope(q, positions, base), cache_k, cache_v, allowed)  # (B, H, Lq, Dh)
    return out, cache_k, cache_v


def kv_cache_bytes(
    num_layers: int, num_kv_heads: int, head_dim: int, tokens: int, batch: int = 1, bytes_per_number: int = 2
) -> int:
    """The memory of a KV cache: 2 (keys and values) x layers x tokens x G x Dh numbers a sequence.

    With G = H this is 2 x layers x tokens x D; grouped-query attention divides it by H / G."""
    return 2 * num_layers * tokens * num_kv_heads * head_dim * batch * bytes_per_number
