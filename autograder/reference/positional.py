"""Sinusoidal positional encoding and its rotation property (chapter 5).

Shape letters: L length, D d_model (even).
PE[t, 2i] = sin(t / 10000^(2i/D)),  PE[t, 2i+1] = cos(t / 10000^(2i/D)).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _frequencies(d_model: int, dtype: torch.dtype) -> Tensor:
    if d_model % 2:
        raise ValueError(f"d_model must be even for sin/cos pairs, got {d_model}")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return torch.exp(-math.log(10000.0) * two_i / d_model).to(dtype)  # (D/2,)


def sinusoidal_encoding(length: int, d_model: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The ``(L, D)`` table of Vaswani et al.: sin at even columns, cos at odd ones."""
    angles = torch.arange(length, dtype=torch.float64)[:, None] * _frequencies(d_model, torch.float64)
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)  # (L, D/2)
    pe[:, 1::2] = torch.cos(angles)  # (L, D/2)
    return pe.to(dtype)


def rotation_matrix(offset: int, d_model: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Block-diagonal ``(D, D)`` R(k) with ``R(k) @ PE[t] == PE[t + k]`` for every t.

    For frequency w the pair (sin wt, cos wt) moves to (sin w(t+k), cos w(t+k)) by the
    2x2 block [[cos wk, sin wk], [-sin wk, cos wk]] (angle addition formulas).
    """
    theta = offset * _frequencies(d_model, torch.float64)  # (D/2,)
    c, s = torch.cos(theta), torch.sin(theta)
    r = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    r[idx, idx], r[idx, idx + 1] = c, s
    r[idx + 1, idx], r[idx + 1, idx + 1] = -s, c
    return r.to(dtype)


def pe_similarity(pe: Tensor) -> Tensor:
    """Dot products of every pair of encodings: ``(L, D)`` -> ``(L, L)``."""
    return pe @ pe.T  # (L, L)


def add_positions(token_embeddings: Tensor, pe: Tensor) -> Tensor:
    """``token_embeddings * sqrt(D) + pe[:L]`` on raw lookups ``(B, L, D)``."""
    length, d = token_embeddings.size(1), token_embeddings.size(-1)
    return token_embeddings * math.sqrt(d) + pe[:length].to(token_embeddings.dtype)
