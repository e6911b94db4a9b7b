"""Checks for lab 03-qk-low-rank (chapter 3).

Shape letters: D d_model, Dh head size, L length, k the rank kept.
A low-rank factorization is not unique (``A Q`` and ``B Q`` give the same ``A B^T`` for
any orthogonal ``Q``, sign flips included), so the checks compare the product
``A @ B.T`` and the factors' shapes, never the factors themselves.
"""

from __future__ import annotations

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, random_tensor
from autograder.checks.kit.expect import call, expect_close, expect_shape, fail
from autograder.checks.kit.sentinels import forbidden

_BUILD_FROM_MATMUL = "Build it from matrix products (@) and transposes (.T)."
_BUILD_FROM_SVD = (
    "Build it from torch.linalg.svd (the exact SVD): keep the k largest singular values and their vectors."
)


def _known_spectrum(singular_values: list[float], seed: int, dtype: torch.dtype) -> Tensor:
    """A square matrix ``U diag(s) V^T`` with the given singular values (random U, V)."""
    n = len(singular_values)
    u, _ = torch.linalg.qr(random_tensor((n, n), seed, torch.float64))
    v, _ = torch.linalg.qr(random_tensor((n, n), seed + 7, torch.float64))
    s = torch.tensor(singular_values, dtype=torch.float64)
    return ((u * s) @ v.T).to(dtype)  # (n, n)


@check
def check_merged_qk(merged_qk, seed: int = 0) -> None:
    """Compare ``merged_qk(W_q, W_k)`` with ``W_q @ W_k.T``: tall, square and one-column
    projections, float32 and float64."""
    cases = [((8, 2), torch.float32), ((6, 6), torch.float32), ((5, 1), torch.float32), ((4, 3), torch.float64)]
    for i, ((d, dh), dtype) in enumerate(cases):
        W_q = random_tensor((d, dh), seed * 100 + 2 * i, dtype)
        W_k = random_tensor((d, dh), seed * 100 + 2 * i + 1, dtype)
        what = f"merged_qk(W_q, W_k) for W_q, W_k of shape ({d}, {dh}), {str(dtype)[6:]} (seed {seed})"
        expected = reference.merged_qk(W_q, W_k)
        with forbidden(merged_qk, ["autograder.reference.merged_qk"], _BUILD_FROM_MATMUL):
            found = call(merged_qk, W_q, W_k, what=what)
        expect_close(
            what,
            found,
            expected,
            mistakes={
                "W_q.T @ W_k: a (Dh, Dh) matrix (summed over the D features), not the (D, D) form": lambda W_k=W_k, W_q=W_q: (  # noqa: E501
                    W_q.T @ W_k
                ),
                "W_k @ W_q.T: queries and keys swapped, which transposes W "
                "(scores[i, j] would become scores[j, i])": lambda W_k=W_k, W_q=W_q: W_k @ W_q.T,
                "W_q @ W_q.T: the key projection is not used": lambda W_q=W_q: W_q @ W_q.T,
            },
            hint="W = W_q W_k^T has shape (D, D) and rank at most Dh.",
        )


@check
def check_bilinear_scores(bilinear_scores, seed: int = 0) -> None:
    """Compare ``bilinear_scores(x, W, scale)`` with ``scale * x @ W @ x.T`` on a
    non-symmetric W, several lengths (1 included), scales and float64."""
    cases = [
        (5, 4, 0.5, torch.float32),
        (1, 3, 2.0, torch.float32),
        (7, 6, 6**-0.5, torch.float32),
        (4, 5, 0.25, torch.float64),
    ]
    for i, (length, d, scale, dtype) in enumerate(cases):
        x = random_tensor((length, d), seed * 100 + 2 * i, dtype)
        W = random_tensor((d, d), seed * 100 + 2 * i + 1, dtype)  # not symmetric
        what = (
            f"bilinear_scores(x, W, scale={scale:.4g}) for x of shape ({length}, {d}), "
            f"W of shape ({d}, {d}), {str(dtype)[6:]} (seed {seed})"
        )
        expected = reference.bilinear_scores(x, W, scale)
        with forbidden(bilinear_scores, ["autograder.reference.bilinear_scores"], _BUILD_FROM_MATMUL):
            found = call(bilinear_scores, x, W, scale, what=what)
        expect_close(
            what,
            found,
            expected,
            mistakes={
                "scale not applied": lambda W=W, x=x: x @ W @ x.T,
                "divided by scale instead of multiplying by it (scale is a multiplier, "
                "e.g. 1/sqrt(Dh))": lambda W=W, scale=scale, x=x: x @ W @ x.T / scale,
                "x @ W.T @ x.T: W transposed, so scores[i, j] became scores[j, i]": lambda W=W, scale=scale, x=x: (
                    scale * (x @ W.T @ x.T)
                ),
                "x.T @ W @ x instead of x @ W @ x.T (the rows of x are the positions)": lambda W=W, d=d, length=length, scale=scale, x=x: (  # noqa: E501
                    scale * (x.T @ W @ x) if length == d else scale * (x.T @ x)
                ),
            },
            hint="scores[i, j] = scale * x_i W x_j^T, with x_i the i-th row of x.",
        )


def _check_product(low_rank_factorize, W: Tensor, rank: int, what: str, expected: Tensor, atol: float) -> None:
    __tracebackhide__ = True
    with forbidden(
        low_rank_factorize,
        ["autograder.reference.low_rank_factorize", "torch.svd_lowrank", "torch.pca_lowrank"],
        _BUILD_FROM_SVD,
    ):
        found = call(low_rank_factorize, W, rank, what=what)
    if not isinstance(found, (tuple, list)) or len(found) != 2:
        fail(what, "a pair (A, B)", f"{type(found).__name__}", hint="return A, B")
    A, B = found
    d = W.shape[0]
    expect_shape(f"{what}: A", A, (d, rank), {"A transposed": (rank, d)})
    expect_shape(
        f"{what}: B",
        B,
        (d, rank),
        {"B transposed (B is V_k, of shape (D, k); torch.linalg.svd returns V^T)": (rank, d)},
    )
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    k = rank
    expect_close(
        f"{what}: A @ B.T",
        A @ B.T,
        expected,
        atol=atol,
        rtol=1e-3,
        mistakes={
            "kept the smallest singular values instead of the largest": lambda: (
                (U[:, d - k :] * S[d - k :]) @ Vh[d - k :]
            ),
            "singular values left out (A = U_k, B = V_k)": lambda: U[:, :k] @ Vh[:k],
            "singular values in both factors (A = U_k S_k and B = V_k S_k)": lambda: (U[:, :k] * S[:k] ** 2) @ Vh[:k],
            "B taken from the columns of V^T instead of its rows (torch.linalg.svd returns V^T, "
            "so V_k is Vh[:k].T)": lambda: (U[:, :k] * S[:k]) @ Vh[:, :k].T,
            "off by one in the rank (kept k + 1 singular values)": lambda: (U[:, : k + 1] * S[: k + 1]) @ Vh[: k + 1],
            "off by one in the rank (kept k - 1 singular values)": lambda: (
                (U[:, : k - 1] * S[: k - 1]) @ Vh[: k - 1] if k >= 1 else None
            ),
        },
        hint="A @ B.T must be U_k S_k V_k^T, the best rank-k approximation (Eckart-Young).",
    )


@check
def check_low_rank_factorize(low_rank_factorize, seed: int = 0) -> None:
    """Compare ``A @ B.T`` from ``low_rank_factorize(W, rank)`` with the truncated SVD,
    on matrices with known singular values and random ones, rank 1 to full, float64;
    A and B must both be ``(D, k)``. A and B themselves are not compared (not unique)."""
    # Known spectrum: the best rank-2 approximation is U_2 diag(5, 4) V_2^T exactly.
    s = [5.0, 4.0, 2.5, 1.0, 0.5, 0.1]
    W = _known_spectrum(s, seed * 100, torch.float64)
    u, _ = torch.linalg.qr(random_tensor((6, 6), seed * 100, torch.float64))
    v, _ = torch.linalg.qr(random_tensor((6, 6), seed * 100 + 7, torch.float64))
    expected = (u[:, :2] * torch.tensor(s[:2], dtype=torch.float64)) @ v[:, :2].T
    _check_product(
        low_rank_factorize,
        W,
        2,
        f"low_rank_factorize(W, 2) for W (6, 6) with singular values {s} (seed {seed})",
        expected,
        atol=1e-8,
    )
    cases = [
        (6, 3, torch.float32),
        (5, 1, torch.float32),
        (4, 4, torch.float32),
        (1, 1, torch.float32),
        (7, 2, torch.float64),
    ]
    for i, (d, rank, dtype) in enumerate(cases):
        W = random_tensor((d, d), seed * 100 + 10 + i, dtype)
        what = f"low_rank_factorize(W, {rank}) for W of shape ({d}, {d}), {str(dtype)[6:]} (seed {seed})"
        A, B = reference.low_rank_factorize(W, rank)
        _check_product(low_rank_factorize, W, rank, what, A @ B.T, atol=1e-4 if dtype == torch.float32 else 1e-9)


@check
def check_low_rank_error(low_rank_error, seed: int = 0) -> None:
    """Compare ``low_rank_error(W, rank)`` with the Frobenius norm of the residual of the
    best rank-k approximation: known singular values, random W, rank 0 and full rank, float64."""
    s = [4.0, 3.0, 1.5, 0.5]
    cases = [
        (_known_spectrum(s, seed * 100, torch.float64), 2, f"W (4, 4) with singular values {s}"),
        (_known_spectrum(s, seed * 100 + 1, torch.float32), 0, f"W (4, 4) with singular values {s}"),
        (random_tensor((6, 6), seed * 100 + 2), 3, "W of shape (6, 6)"),
        (random_tensor((5, 5), seed * 100 + 3), 5, "W of shape (5, 5) (full rank: no error)"),
        (random_tensor((8, 8), seed * 100 + 4, torch.float64), 1, "W of shape (8, 8), float64"),
    ]
    for W, rank, desc in cases:
        what = f"low_rank_error(W, {rank}) for {desc}, {str(W.dtype)[6:]} (seed {seed})"
        expected = reference.low_rank_error(W, rank)
        S = torch.linalg.svdvals(W)
        with forbidden(
            low_rank_error,
            ["autograder.reference.low_rank_error", "autograder.reference.low_rank_factorize"],
            "Compute it from the singular values (torch.linalg.svdvals) alone.",
        ):
            found = call(low_rank_error, W, rank, what=what)
        expect_close(
            what,
            found,
            expected,
            atol=1e-5,
            rtol=1e-4,
            mistakes={
                "no square root (that is the squared error)": lambda S=S, rank=rank: S[rank:].pow(2).sum(),
                "sum of the dropped singular values, not the root of the sum of their squares": lambda S=S, rank=rank: (
                    S[rank:].sum()
                ),
                "sum of the kept singular values instead of the dropped ones": lambda S=S, rank=rank: S[:rank].sum(),
                "norm of the kept part (the approximation) instead of the residual": lambda S=S, rank=rank: (
                    S[:rank].pow(2).sum().sqrt()
                ),
                "the largest dropped singular value alone (that is the spectral-norm error, "
                "not the Frobenius one)": lambda S=S, rank=rank: S[rank] if rank < len(S) else None,
                "off by one in the rank (dropped from index k + 1)": lambda S=S, rank=rank: (
                    S[rank + 1 :].pow(2).sum().sqrt()
                ),
                "off by one in the rank (dropped from index k - 1)": lambda S=S, rank=rank: (
                    S[rank - 1 :].pow(2).sum().sqrt() if rank >= 1 else None
                ),
            },
            hint="||W - W_k||_F = sqrt(sigma_{k+1}^2 + ... + sigma_D^2), singular values sorted "
            "from the largest; return a 0-dim tensor.",
        )
