"""The Q/K factorization and its best low-rank approximations (chapter 3).

Shape letters: D d_model, Dh head size, L length, k the rank kept.
Raw weights multiply on the right: scores = x W_q (x W_k)^T = x (W_q W_k^T) x^T.
"""

from __future__ import annotations

import torch
from torch import Tensor


def merged_qk(W_q: Tensor, W_k: Tensor) -> Tensor:
    """The one bilinear form W = W_q W_k^T: ``(D, Dh), (D, Dh)`` -> ``(D, D)``, rank <= Dh."""
    return W_q @ W_k.T  # (D, D)


def bilinear_scores(x: Tensor, W: Tensor, scale: float = 1.0) -> Tensor:
    """``scale * x W x^T``: ``(L, D), (D, D)`` -> ``(L, L)``."""
    return scale * (x @ W @ x.T)  # (L, L)


def low_rank_factorize(W: Tensor, rank: int) -> tuple[Tensor, Tensor]:
    """``(A, B)`` with ``A @ B.T`` the best rank-``rank`` approximation of W (Eckart-Young).

    From the SVD W = U S V^T: A = U_k S_k ``(D, k)``, B = V_k ``(D, k)``.
    """
    if not 0 <= rank <= min(W.shape):
        raise ValueError(f"rank must be between 0 and {min(W.shape)} for W of shape {tuple(W.shape)}, got {rank}")
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    return U[:, :rank] * S[:rank], Vh[:rank].T  # (D, k), (D, k)


def low_rank_error(W: Tensor, rank: int) -> Tensor:
    """Frobenius norm of W minus its best rank-``rank`` approximation: sqrt(sum of the
    squared singular values beyond the first ``rank``)."""
    S = torch.linalg.svdvals(W)
    return S[rank:].pow(2).sum().sqrt()
