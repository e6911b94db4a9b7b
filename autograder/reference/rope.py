"""Rotary position embeddings, RoPE (chapter 10).

Shape letters: B batch, H heads, L length, Dh head width (even), P positions.

Chapter 5 showed that moving k positions along the sinusoidal table is one block-diagonal
rotation R(k). RoPE (Su et al., 2021) uses that rotation directly: instead of adding a
position vector to the token, it rotates each query and each key by the angle of its own
position. The score between a query at position m and a key at position n is then
``q^T R(m)^T R(n) k = q^T R(n - m) k``: it depends on the positions only through their offset,
whatever the projections W_Q and W_K are. Values are not rotated.

Pair i of the Dh features turns by the angle ``position * base^(-2i / Dh)``. Two layouts of the
pairs are in use:

- ``"adjacent"``: features (2i, 2i + 1), as in the paper and in Meta's original Llama code;
- ``"halves"``: features (i, i + Dh/2), as in Hugging Face's ``rotate_half`` and GPT-NeoX.

They are the same rotation with the features listed in another order: ``halves_permutation``
gives that order, and ``apply_rope(x[..., perm], pairing="halves") ==
apply_rope(x, pairing="adjacent")[..., perm]``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

Pairing = Literal["adjacent", "halves"]


def rope_frequencies(head_dim: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> Tensor:
    """The angular frequencies ``w_i = base^(-2i / Dh)`` for i = 0 .. Dh/2 - 1, shape ``(Dh/2,)``.

    With ``base`` 10000 and Dh = D these are chapter 5's frequencies."""
    if head_dim % 2:
        raise ValueError(f"RoPE rotates pairs of features: head_dim must be even, got {head_dim}")
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (-2.0 * i / head_dim)).to(dtype)  # (Dh/2,)


def rope_angles(positions: Tensor, head_dim: int, base: float = 10000.0) -> Tensor:
    """``positions[..., None] * w``: the angle of every pair at every position, float64.

    Shape: positions ``(L,)`` or ``(B, L)`` (integers) -> ``(L, Dh/2)`` or ``(B, L, Dh/2)``."""
    return positions.to(torch.float64)[..., None] * rope_frequencies(head_dim, base)  # (..., L, Dh/2)


def halves_permutation(head_dim: int) -> Tensor:
    """The order of features that turns the adjacent layout into the halves layout: even
    features first, then odd ones, ``[0, 2, 4, ..., 1, 3, 5, ...]`` (shape ``(Dh,)``).

    Pair i is features (2i, 2i + 1) in the adjacent layout; after ``x[..., perm]`` those two
    features sit at i and i + Dh/2, which is pair i of the halves layout."""
    return torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)])  # (Dh,)


def apply_rope(x: Tensor, positions: Tensor, base: float = 10000.0, pairing: Pairing = "adjacent") -> Tensor:
    """Rotate every pair of features of ``x`` by ``position * w_i`` (RoPE, chapter 10).

    Pair (a, b) becomes ``(a cos t - b sin t, a sin t + b cos t)`` with t the angle.

    Args:
        x: queries or keys ``(B, H, L, Dh)`` (any leading dimensions; the last two are L, Dh).
        positions: the position of each of the L tokens, ``(L,)`` for the whole batch or
            ``(B, L)`` per row (left padding, or a cache whose rows are at different lengths).
        base: the frequency base (10000 in the paper; a model may be trained with another).
        pairing: ``"adjacent"`` (features 2i, 2i + 1) or ``"halves"`` (features i, i + Dh/2).

    Returns:
        a tensor of the shape and dtype of ``x``.
    """
    head_dim = x.size(-1)
    angles = rope_angles(positions.to(x.device), head_dim, base)  # (L, Dh/2) or (B, L, Dh/2)
    if angles.dim() == 3:
        angles = angles[:, None]  # (B, 1, L, Dh/2): the same positions for every head
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if pairing == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]  # (..., L, Dh/2) each
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)  # (..., L, Dh/2, 2) -> Dh
    if pairing == "halves":
        a, b = x[..., : head_dim // 2], x[..., head_dim // 2 :]  # (..., L, Dh/2) each
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., L, Dh)
    raise ValueError(f"pairing must be 'adjacent' or 'halves', got {pairing!r}")


def rope_scores(q: Tensor, k: Tensor, q_positions: Tensor, k_positions: Tensor, base: float = 10000.0) -> Tensor:
    """The raw scores ``R(m) q . R(n) k`` (no 1/sqrt(Dh)) of queries at ``q_positions`` and keys
    at ``k_positions``: ``(..., Lq, Dh)``, ``(..., Lk, Dh)`` -> ``(..., Lq, Lk)``."""
    return apply_rope(q, q_positions, base) @ apply_rope(k, k_positions, base).transpose(-2, -1)  # (..., Lq, Lk)
