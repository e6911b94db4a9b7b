"""Tests of the checks of lab 05-positional-encoding: right answers pass, usual mistakes
fail with a message that names them, forbidden shortcuts and untouched stubs are caught."""

from __future__ import annotations

import math

import pytest
import torch

from autograder import reference
from autograder.checks import ForbiddenCall
from autograder.checks.lab05_positional_encoding.positional_encoding import (
    check_add_positions,
    check_pe_similarity,
    check_rotation_matrix,
    check_sinusoidal_encoding,
)
from tests.checks.student_copies import as_student

# ----------------------------------------------------------------------------- candidates


def encoding_float32(length, d_model, *, swap=False, exponent=2.0, halves=False):
    """A float32 version written with pow; the keywords make it wrong on purpose."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]  # (L, 1)
    i = torch.arange(d_model // 2, dtype=torch.float32)  # (D/2,)
    angles = pos / 10000 ** (exponent * i / d_model)  # (L, D/2)
    first, second = (torch.cos(angles), torch.sin(angles)) if swap else (torch.sin(angles), torch.cos(angles))
    if halves:
        return torch.cat([first, second], dim=-1)
    pe = torch.zeros(length, d_model)
    pe[:, 0::2], pe[:, 1::2] = first, second
    return pe


def encoding_loop(length, d_model):
    """Column by column in float64, cast at the end."""
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    t = torch.arange(length, dtype=torch.float64)
    for col in range(0, d_model, 2):
        w = 1.0 / 10000 ** (col / d_model)
        pe[:, col] = torch.sin(t * w)
        pe[:, col + 1] = torch.cos(t * w)
    return pe.float()


def rotation_block_diag(offset, d_model, *, swap=False, exponent=2.0, transpose=False):
    """With torch.block_diag; the keywords make it wrong on purpose."""
    blocks = []
    for i in range(d_model // 2):
        theta = offset / 10000 ** (exponent * i / d_model)
        c, s = math.cos(theta), math.sin(theta)
        if swap:
            c, s = s, c
        block = torch.tensor([[c, s], [-s, c]])
        blocks.append(block.T if transpose else block)
    return torch.block_diag(*blocks)


def rotation_vectorised(offset, d_model):
    """Scatter the four entries of every block at once, in float64."""
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.cos(offset * w), torch.sin(offset * w)
    r = torch.zeros(d_model, d_model, dtype=torch.float64)
    even = torch.arange(0, d_model, 2)
    r[even, even], r[even, even + 1], r[even + 1, even], r[even + 1, even + 1] = c, s, -s, c
    return r.float()


def rotation_wrong_at_one_offset(offset, d_model):
    """Right everywhere except at offset 40, which the sampled comparison does not visit."""
    return rotation_vectorised(offset + (1 if offset == 40 else 0), d_model)


def _stub(*args, **kwargs):
    raise NotImplementedError()


# ----------------------------------------------------------------------------- sinusoidal_encoding


def test_reference_encoding_passes():
    """Does the reference table pass its own check, for several seeds?"""
    for seed in (0, 1, 2):
        check_sinusoidal_encoding(as_student(reference.sinusoidal_encoding), seed=seed)


@pytest.mark.parametrize("candidate", [encoding_float32, encoding_loop])
def test_valid_encodings_pass(candidate):
    """Do a float32 pow version and a column loop in float64 pass?"""
    check_sinusoidal_encoding(candidate, seed=1)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(swap=True), "sin and cos swapped"),
        (dict(exponent=1.0), "2i/D written as i/D (a factor of two)"),
        (dict(exponent=4.0), "giving 4i/D (a factor of two)"),
        (dict(halves=True), "concatenated, not interleaved"),
    ],
)
def test_wrong_encodings_are_named(kwargs, words, fails):
    """Does each usual mistake in the table fail with a message naming it?"""
    fails(check_sinusoidal_encoding, lambda length, d: encoding_float32(length, d, **kwargs), said=words)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda length, d: encoding_float32(length + 1, d)[1:], "positions counted from 1"),
        (lambda length, d: encoding_float32(length, d).T, "(D, L) instead of (L, D)"),
    ],
    ids=["from-one", "transposed"],
)
def test_shifted_and_transposed_encodings_are_named(candidate, words, fails):
    """Do a table whose positions start at 1 and a transposed table fail with their names?"""
    fails(check_sinusoidal_encoding, candidate, said=words)


def test_encoding_using_the_reference_is_forbidden(fails):
    """Is a table copied from the reference caught?"""
    fails(
        check_sinusoidal_encoding,
        lambda length, d: reference.sinusoidal_encoding(length, d),
        error=ForbiddenCall,
        match="sinusoidal_encoding",
    )


def test_encoding_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError, not a check failure?"""
    fails(check_sinusoidal_encoding, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- rotation_matrix


def test_reference_rotation_passes():
    """Does the reference R(k) pass, for several seeds?"""
    for seed in (0, 1):
        check_rotation_matrix(as_student(reference.rotation_matrix), seed=seed)


@pytest.mark.parametrize("candidate", [rotation_block_diag, rotation_vectorised])
def test_valid_rotations_pass(candidate):
    """Do a block_diag version and a vectorised float64 version pass?"""
    check_rotation_matrix(candidate, seed=2)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(swap=True), "sin and cos swapped"),
        (dict(exponent=1.0), "2i/D written as i/D (a factor of two)"),
        (dict(transpose=True), "block transposed (rotates backwards: R(-k))"),
    ],
)
def test_wrong_rotations_are_named(kwargs, words, fails):
    """Does each usual mistake in R(k) fail with a message naming it?"""
    fails(check_rotation_matrix, lambda k, d: rotation_block_diag(k, d, **kwargs), said=words)


def test_rotation_property_is_checked_at_every_offset(fails):
    """Is a matrix wrong at one offset outside the sample caught by the every-offset test?"""
    fails(
        check_rotation_matrix,
        rotation_wrong_at_one_offset,
        seed=0,
        said=["for every offset k in 0..127", "offset k=40"],
    )


def test_rotation_using_the_reference_is_forbidden(fails):
    """Is R(k) copied from the reference caught?"""
    fails(
        check_rotation_matrix,
        lambda k, d: reference.rotation_matrix(k, d),
        error=ForbiddenCall,
        match="rotation_matrix",
    )


def test_rotation_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError?"""
    fails(check_rotation_matrix, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- pe_similarity


def test_reference_similarity_passes():
    """Does the reference pass, for several seeds?"""
    for seed in (0, 1, 2):
        check_pe_similarity(as_student(reference.pe_similarity), seed=seed)


@pytest.mark.parametrize(
    "candidate",
    [
        lambda pe: torch.einsum("id,jd->ij", pe, pe),
        lambda pe: (pe[:, None, :] * pe[None, :, :]).sum(-1),
    ],
)
def test_valid_similarities_pass(candidate):
    """Do an einsum and a broadcast-and-sum version pass?"""
    check_pe_similarity(candidate, seed=3)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda pe: pe.T @ pe, "dot products of columns"),
        (
            lambda pe: torch.nn.functional.normalize(pe, dim=-1) @ torch.nn.functional.normalize(pe, dim=-1).T,
            "cosine similarities",
        ),
        (lambda pe: torch.cdist(pe, pe), "distances instead of dot products"),
    ],
)
def test_wrong_similarities_are_named(candidate, words, fails):
    """Do columns instead of rows, cosines and distances fail with their names?"""
    fails(check_pe_similarity, candidate, said=words)


def test_similarity_using_the_reference_is_forbidden(fails):
    """Is the reference's pe_similarity caught?"""
    fails(check_pe_similarity, lambda pe: reference.pe_similarity(pe), error=ForbiddenCall, match="pe_similarity")


def test_similarity_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError?"""
    fails(check_pe_similarity, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- add_positions


def test_reference_add_positions_passes():
    """Does the reference pass, for several seeds?"""
    for seed in (0, 1, 2):
        check_add_positions(as_student(reference.add_positions), seed=seed)


@pytest.mark.parametrize(
    "candidate",
    [
        lambda x, pe: pe[: x.size(1)].unsqueeze(0) + x * x.size(-1) ** 0.5,
        lambda x, pe: torch.addcmul(pe[: x.shape[1]], x, torch.tensor(math.sqrt(x.shape[2]), dtype=x.dtype)),
    ],
)
def test_valid_add_positions_pass(candidate):
    """Do an unsqueeze version and an addcmul version pass?"""
    check_add_positions(candidate, seed=4)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda x, pe: x + pe[: x.size(1)], "not multiplied by sqrt(D)"),
        (lambda x, pe: x / math.sqrt(x.size(-1)) + pe[: x.size(1)], "divided by sqrt(D)"),
        (lambda x, pe: (x + pe[: x.size(1)]) * math.sqrt(x.size(-1)), "the encoding must not be scaled"),
        (lambda x, pe: x * x.size(-1) + pe[: x.size(1)], "multiplied by D instead of sqrt(D)"),
    ],
)
def test_wrong_add_positions_are_named(candidate, words, fails):
    """Do a missing, an inverted and a misplaced sqrt(D) fail with their names?"""
    fails(check_add_positions, candidate, said=words)


def test_add_positions_using_the_reference_is_forbidden(fails):
    """Is the reference's add_positions caught?"""
    fails(check_add_positions, lambda x, pe: reference.add_positions(x, pe), error=ForbiddenCall, match="add_positions")


def test_add_positions_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError?"""
    fails(check_add_positions, _stub, error=NotImplementedError)


def test_encoding_in_float64_is_told_the_dtype_and_why(fails):
    """Is a float64 table told that float32 is expected and why (there is no input tensor
    whose dtype it could keep)?"""
    message = fails(
        check_sinusoidal_encoding,
        lambda length, d: encoding_float32(length, d).double(),
        said=["dtype torch.float32", "no input tensor"],
    )
    assert "keep the dtype of the inputs" not in message
