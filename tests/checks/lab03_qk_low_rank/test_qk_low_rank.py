"""Tests of the checks of lab 03-qk-low-rank: the reference and valid alternatives pass,
known mistakes fail with a message that names them, forbidden calls are caught."""

from __future__ import annotations

import pytest
import torch

from autograder import reference
from autograder.checks import (
    ForbiddenCall,
    check_bilinear_scores,
    check_low_rank_error,
    check_low_rank_factorize,
    check_merged_qk,
)
from tests.checks.student_copies import as_student

# ----------------------------------------------------------------------------- merged_qk


@pytest.mark.parametrize("seed", [0, 1])
def test_reference_merged_qk_passes(seed):
    """Does the reference's merged_qk pass its own check?"""
    check_merged_qk(as_student(reference.merged_qk), seed=seed)


def test_einsum_merged_qk_passes():
    """Does an einsum over the head axis pass?"""
    check_merged_qk(lambda W_q, W_k: torch.einsum("ik,jk->ij", W_q, W_k))


def test_transpose_of_product_merged_qk_passes():
    """Does (W_k W_q^T)^T, the same matrix written another way, pass?"""
    check_merged_qk(lambda W_q, W_k: (W_k @ W_q.T).T)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda W_q, W_k: W_k @ W_q.T, "queries and keys swapped"),
        (lambda W_q, W_k: W_q.T @ W_k, "(Dh, Dh)"),
        (lambda W_q, W_k: W_q @ W_q.T, "key projection is not used"),
    ],
)
def test_wrong_merged_qk_fails_naming_the_mistake(wrong, words, fails):
    """Is each known mistake of merged_qk rejected with its name?"""
    fails(check_merged_qk, wrong, mistake=words)


def test_merged_qk_using_the_reference_is_forbidden(fails):
    """Is a merged_qk that calls the reference caught?"""
    fails(check_merged_qk, lambda W_q, W_k: reference.merged_qk(W_q, W_k), error=ForbiddenCall, match="reference")


def test_merged_qk_stub_raises_not_implemented(fails):
    """Does an untouched stub reach nbgrader as NotImplementedError?"""

    def stub(W_q, W_k):
        raise NotImplementedError()

    fails(check_merged_qk, stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- bilinear_scores


def test_reference_bilinear_scores_passes():
    """Does the reference's bilinear_scores pass its own check?"""
    for seed in (0, 1):
        check_bilinear_scores(as_student(reference.bilinear_scores), seed=seed)


def test_einsum_bilinear_scores_passes():
    """Does an einsum with the scale applied to W first pass?"""
    check_bilinear_scores(lambda x, W, scale: torch.einsum("id,de,je->ij", x, scale * W, x))


def test_bilinear_scores_via_factors_passes():
    """Does (x W) x^T multiplied by the scale at the end pass?"""
    check_bilinear_scores(lambda x, W, scale: (x @ W).matmul(x.transpose(0, 1)).mul(scale))


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda x, W, scale: x @ W @ x.T, "scale not applied"),
        (lambda x, W, scale: x @ W @ x.T / scale, "divided by scale"),
        (lambda x, W, scale: scale * x @ W.T @ x.T, "W transposed"),
    ],
)
def test_wrong_bilinear_scores_fails_naming_the_mistake(wrong, words, fails):
    """Is each known mistake of bilinear_scores rejected with its name?"""
    fails(check_bilinear_scores, wrong, mistake=words)


def test_bilinear_scores_using_the_reference_is_forbidden(fails):
    """Is a bilinear_scores that calls the reference caught?"""
    fails(check_bilinear_scores, lambda x, W, scale: reference.bilinear_scores(x, W, scale), error=ForbiddenCall)


# ----------------------------------------------------------------------------- low_rank_factorize


def test_reference_low_rank_factorize_passes():
    """Does the reference's low_rank_factorize pass its own check?"""
    for seed in (0, 1, 2):
        check_low_rank_factorize(as_student(reference.low_rank_factorize), seed=seed)


def _other_split(W, rank):
    """The other factorization of the same product: A = U_k, B = V_k S_k."""
    U, S, Vh = torch.linalg.svd(W)
    return U[:, :rank], Vh[:rank].T * S[:rank]


def _rotated(W, rank):
    """U_k S_k and V_k times an orthogonal matrix and a sign flip: same product."""
    U, S, Vh = torch.linalg.svd(W)
    A, B = U[:, :rank] * S[:rank], Vh[:rank].T
    Q, _ = torch.linalg.qr(torch.randn(rank, rank, generator=torch.Generator().manual_seed(3), dtype=W.dtype))
    Q[:, 0] = -Q[:, 0]
    return A @ Q, B @ Q


def _eigh_based(W, rank):
    """From the eigenvectors of W^T W, in float64: a valid if roundabout SVD."""
    Wd = W.double()
    evals, V = torch.linalg.eigh(Wd.T @ Wd)
    V = V.flip(-1)[:, :rank]  # largest first
    return (Wd @ V).to(W.dtype), V.to(W.dtype)


@pytest.mark.parametrize("alternative", [_other_split, _rotated, _eigh_based])
def test_valid_low_rank_factorizations_pass(alternative):
    """Do other factorizations with the same product (U_k and V_k S_k, rotated factors,
    factors from an eigendecomposition) pass, since A and B are not unique?"""
    check_low_rank_factorize(alternative)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (
            lambda W, r: (torch.linalg.svd(W)[0][:, -r:] * torch.linalg.svd(W)[1][-r:], torch.linalg.svd(W)[2][-r:].T),
            "smallest singular values",
        ),
        (lambda W, r: (torch.linalg.svd(W)[0][:, :r], torch.linalg.svd(W)[2][:r].T), "singular values left out"),
        (
            lambda W, r: (torch.linalg.svd(W)[0][:, :r] * torch.linalg.svd(W)[1][:r], torch.linalg.svd(W)[2][:, :r]),
            "columns of V^T",
        ),
        (
            lambda W, r: (
                torch.linalg.svd(W)[0][:, :r] * torch.linalg.svd(W)[1][:r],
                torch.linalg.svd(W)[2][:r].T * torch.linalg.svd(W)[1][:r],
            ),
            "in both factors",
        ),
    ],
)
def test_wrong_low_rank_factorize_fails_naming_the_mistake(wrong, words, fails):
    """Is each known mistake of low_rank_factorize rejected with its name?"""
    fails(check_low_rank_factorize, wrong, mistake=words)


def test_low_rank_factorize_returning_V_transposed_fails_on_shape(fails):
    """Is B returned as (k, D) (rows of V^T) rejected on its shape, with the reason?"""

    def wrong(W, rank):
        U, S, Vh = torch.linalg.svd(W)
        return U[:, :rank] * S[:rank], Vh[:rank]

    fails(check_low_rank_factorize, wrong, said="shape", match="torch.linalg.svd returns V")


def test_low_rank_factorize_returning_the_product_fails(fails):
    """Is a single matrix (the product) rejected as not a pair?"""
    fails(check_low_rank_factorize, lambda W, r: W, match="a pair")


@pytest.mark.parametrize("op", ["reference", "svd_lowrank"])
def test_low_rank_factorize_forbidden_ops_are_caught(op, fails):
    """Are the reference and torch.svd_lowrank caught?"""

    def via_reference(W, rank):
        return reference.low_rank_factorize(W, rank)

    def via_torch(W, rank):
        U, S, V = torch.svd_lowrank(W, q=rank)
        return U * S, V

    fails(check_low_rank_factorize, via_reference if op == "reference" else via_torch, error=ForbiddenCall)


# ----------------------------------------------------------------------------- low_rank_error


def test_reference_low_rank_error_passes():
    """Does the reference's low_rank_error pass its own check?"""
    for seed in (0, 1, 2):
        check_low_rank_error(as_student(reference.low_rank_error), seed=seed)


def test_low_rank_error_by_vector_norm_passes():
    """Does the 2-norm of the dropped singular values pass?"""
    check_low_rank_error(lambda W, r: torch.linalg.vector_norm(torch.linalg.svdvals(W)[r:]))


def test_low_rank_error_from_the_residual_passes():
    """Does the explicit residual's Frobenius norm (slower, same value) pass?"""

    def explicit(W, rank):
        U, S, Vh = torch.linalg.svd(W)
        return torch.linalg.matrix_norm(W - (U[:, :rank] * S[:rank]) @ Vh[:rank])

    check_low_rank_error(explicit)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda W, r: torch.linalg.svdvals(W)[r:].pow(2).sum(), "no square root"),
        (lambda W, r: torch.linalg.svdvals(W)[r:].sum(), "sum of the dropped singular values"),
        (lambda W, r: torch.linalg.svdvals(W)[:r].sum(), "sum of the kept singular values"),
        (lambda W, r: torch.linalg.svdvals(W)[r + 1 :].pow(2).sum().sqrt(), "off by one"),
        (lambda W, r: torch.linalg.svdvals(W)[:r].pow(2).sum().sqrt(), "kept part"),
        (lambda W, r: torch.linalg.svdvals(W)[r - 1 :].pow(2).sum().sqrt(), "dropped from index k - 1"),
        (lambda W, r: torch.linalg.svdvals(W)[r], "spectral-norm error"),
    ],
)
def test_wrong_low_rank_error_fails_naming_the_mistake(wrong, words, fails):
    """Is each known mistake of low_rank_error rejected with its name?"""
    fails(check_low_rank_error, wrong, mistake=words)


def test_low_rank_error_returning_a_float_fails(fails):
    """Is a Python float rejected with a request for a tensor?"""
    fails(check_low_rank_error, lambda W, r: float(torch.linalg.svdvals(W)[r:].norm()), match="torch.Tensor")


def test_low_rank_error_using_the_reference_is_forbidden(fails):
    """Is a low_rank_error that calls the reference caught?"""
    fails(check_low_rank_error, lambda W, r: reference.low_rank_error(W, r), error=ForbiddenCall)


def test_low_rank_stubs_raise_not_implemented(fails):
    """Do untouched stubs reach nbgrader as NotImplementedError?"""

    def stub(*args):
        raise NotImplementedError()

    for check in (check_bilinear_scores, check_low_rank_factorize, check_low_rank_error):
        fails(check, stub, error=NotImplementedError)
