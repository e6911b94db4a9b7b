"""Tests of the checks of lab 02-self-attention: right answers pass, known mistakes are named."""

from __future__ import annotations

import math

import pytest
import torch

from autograder import reference
from autograder.checks import ForbiddenCall
from autograder.checks.kit import variants
from autograder.checks.lab02_self_attention.self_attention import (
    check_scaled_dot_product_attention,
    check_self_attention,
    check_single_query_attention,
    check_softmax,
)
from tests.checks.student_copies import as_student

# ----------------------------------------------------------------------------- softmax


def softmax_logsumexp(x, dim=-1):
    """exp(x - logsumexp(x)), with the same guard for rows of -inf."""
    m = x.amax(dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    lse = m + torch.log(torch.exp(x - m).sum(dim, keepdim=True))
    return torch.exp(x - lse).nan_to_num(0.0)


def softmax_by_moving_axis(x, dim=-1):
    """Move the axis last, normalise, move it back."""
    y = x.movedim(dim, -1)
    top = y.max(-1, keepdim=True).values
    e = torch.exp(y - top.clamp_min(torch.finfo(y.dtype).min))  # a row of -inf: shift by a finite number
    return (e / e.sum(-1, keepdim=True).clamp_min(torch.finfo(y.dtype).tiny)).movedim(-1, dim)


def softmax_no_shift(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim, keepdim=True)


def softmax_no_sum(x, dim=-1):
    return torch.exp(x - x.amax(dim, keepdim=True))


def test_softmax_accepts_right_answers():
    """Do the reference, a logsumexp version and a moved-axis version pass?"""
    for candidate in (as_student(reference.softmax), softmax_logsumexp, softmax_by_moving_axis):
        for seed in (0, 1, 2):
            check_softmax(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (softmax_no_shift, "maximum is not subtracted"),
        (softmax_no_sum, "not divided by its sum"),
    ],
)
def test_softmax_names_mistakes(candidate, words, fails):
    """Do softmax without the max shift and without the normalisation fail, named?"""
    fails(check_softmax, candidate, mistake=words)


def test_softmax_names_nan_rows(fails):
    """Does a softmax that turns a row of -inf into NaN fail with a message naming it?"""

    def nan_rows(x, dim=-1):
        e = torch.exp(x - x.amax(dim, keepdim=True))
        return e / e.sum(dim, keepdim=True)

    fails(check_softmax, nan_rows, match="a row of -inf gives NaN")


def _softmax_over_on(shape, axis):
    """A right softmax, except on inputs of ``shape``, where it normalises over ``axis`` instead."""

    def softmax(x, dim=-1):
        return softmax_by_moving_axis(x, axis if tuple(x.shape) == shape else dim)

    return softmax


# (shape, dim) of each case of check_softmax where an axis other than dim gives other values, and that axis
SOFTMAX_WRONG_AXES = [
    ((2, 3, 5), -1, 0),
    ((2, 3, 5), -1, 1),
    ((4, 6), 0, 1),
    ((3, 7), 1, 0),
    ((2, 5), -1, 0),
    ((3, 4), -1, 0),
]


@pytest.mark.parametrize("shape, dim, axis", SOFTMAX_WRONG_AXES)
def test_softmax_names_every_wrong_axis(shape, dim, axis, fails):
    """Does a softmax over each wrong axis of each input fail, naming the axis used and the one wanted?"""
    fails(check_softmax, _softmax_over_on(shape, axis), mistake=f"normalised over dim {axis} instead of dim {dim}")


def test_softmax_forbids_torch_softmax(fails):
    """Does a candidate calling torch.softmax fail with ForbiddenCall?"""
    fails(check_softmax, lambda x, dim=-1: torch.softmax(x, dim), error=ForbiddenCall, match="torch.softmax")


# ----------------------------------------------------------------------------- single query


def single_einsum(q, K, V):
    w = softmax_by_moving_axis(torch.einsum("d,ld->l", q, K) / q.shape[0] ** 0.5)
    return torch.einsum("l,lv->v", w, V)


def single_as_matrix(q, K, V):
    """One query as a (1, Dh) matrix, then drop the row."""
    scores = q[None] @ K.T / math.sqrt(K.shape[-1])  # (1, Lk)
    return (torch.softmax(scores, dim=-1) @ V)[0]


def single_no_scale(q, K, V):
    return torch.softmax(K @ q, -1) @ V


def single_over_dh(q, K, V):
    return torch.softmax(K @ q / q.shape[0], -1) @ V


def single_returns_weights(q, K, V):
    return torch.softmax(K @ q / math.sqrt(q.shape[0]), -1)


def test_single_query_accepts_right_answers():
    """Do the reference, an einsum version and a (1, Dh)-matrix version pass?"""
    for candidate in (as_student(reference.single_query_attention), single_einsum, single_as_matrix):
        for seed in (0, 1, 2):
            check_single_query_attention(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (single_no_scale, variants.NO_SCALE),
        (single_over_dh, "divided by Dh instead of sqrt(Dh)"),
        (single_returns_weights, "returns the attention weights"),
    ],
)
def test_single_query_names_mistakes(candidate, words, fails):
    """Do a missing scale, a 1/Dh scale and returning the weights fail, named?"""
    fails(check_single_query_attention, candidate, mistake=words)


def test_single_query_forbids_sdpa(fails):
    """Does a candidate calling F.scaled_dot_product_attention fail with ForbiddenCall?"""

    def uses_torch(q, K, V):
        return torch.nn.functional.scaled_dot_product_attention(q[None], K, V)[0]

    fails(check_single_query_attention, uses_torch, error=ForbiddenCall, match="scaled_dot_product_attention")


# ----------------------------------------------------------------------------- scaled dot-product


def sdpa_einsum(q, k, v, attn_mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, -math.inf)
    w = softmax_by_moving_axis(scores).nan_to_num(0.0)
    return torch.einsum("...qk,...kv->...qv", w, v), w


def sdpa_additive_mask_float64(q, k, v, attn_mask=None):
    """An additive float mask (0 or -inf), computed in float64 and cast back."""
    scores = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = scores + torch.zeros(attn_mask.shape, dtype=torch.float64).masked_fill(~attn_mask, -math.inf)
    w = reference.softmax(scores, dim=-1)
    return (w @ v.double()).to(q.dtype), w.to(q.dtype)


def _attend(q, k, v, attn_mask=None, *, scale=None, dim=-1, after=False, swap=False, inverted=False):
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)
    if attn_mask is not None and not after:
        scores = scores.masked_fill(attn_mask if inverted else ~attn_mask, -math.inf)
    w = reference.softmax(scores, dim=dim)
    if attn_mask is not None and after:
        w = w.masked_fill(~attn_mask, 0.0)
    return (w, w @ v) if swap else (w @ v, w)


def sdpa_no_scale(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, scale=1.0)


def sdpa_over_dh(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, scale=q.shape[-1])


def sdpa_over_queries(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, dim=-2)


def sdpa_mask_after(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, after=True)


def sdpa_swapped(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, swap=True)


def sdpa_inverted_mask(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, inverted=True)


def sdpa_nan_rows(q, k, v, attn_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, -math.inf)
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


def test_sdpa_accepts_right_answers():
    """Do the reference, an einsum version and an additive-mask float64 version pass?"""
    for candidate in (as_student(reference.scaled_dot_product_attention), sdpa_einsum, sdpa_additive_mask_float64):
        for seed in (0, 1, 2):
            check_scaled_dot_product_attention(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (sdpa_no_scale, variants.NO_SCALE),
        (sdpa_over_dh, variants.SCALE_BY_DH),
        (sdpa_over_queries, variants.SOFTMAX_OVER_QUERIES),
        (sdpa_mask_after, variants.MASK_AFTER_SOFTMAX),
        (sdpa_swapped, "weights and output swapped"),
        (sdpa_inverted_mask, variants.MASK_INVERTED),
        (sdpa_nan_rows, variants.NAN_ROWS),
    ],
)
def test_sdpa_names_mistakes(candidate, words, fails):
    """Does each known mistake of attention fail with a message naming it?"""
    fails(check_scaled_dot_product_attention, candidate, mistake=words)


def _sdpa_over_on(ndim, axis):
    """Right attention, except on inputs of ``ndim`` axes, whose softmax runs over ``axis`` of the scores."""

    def attention(q, k, v, attn_mask=None):
        return _attend(q, k, v, attn_mask, dim=axis if q.dim() == ndim else -1)

    return attention


@pytest.mark.parametrize("ndim, axis", [(3, 0), (3, 1), (4, 0), (4, 1), (4, 2)])
def test_sdpa_names_every_wrong_axis(ndim, axis, fails):
    """Does a softmax over each wrong axis of the scores (3-D without heads, 4-D with) fail, named?"""
    words = variants.SOFTMAX_OVER_QUERIES if axis == ndim - 2 else variants.softmax_over(axis)
    fails(check_scaled_dot_product_attention, _sdpa_over_on(ndim, axis), mistake=words)


def test_sdpa_forbids_torch_and_reference(fails):
    """Do candidates calling F.scaled_dot_product_attention or the reference fail with ForbiddenCall?"""

    def uses_torch(q, k, v, attn_mask=None):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return out, None

    def uses_reference(q, k, v, attn_mask=None):
        return reference.scaled_dot_product_attention(q, k, v, attn_mask)

    fails(
        check_scaled_dot_product_attention,
        uses_torch,
        error=ForbiddenCall,
        match="torch.nn.functional.scaled_dot_product_attention",
    )
    fails(
        check_scaled_dot_product_attention,
        uses_reference,
        error=ForbiddenCall,
        match="autograder.reference.scaled_dot_product_attention",
    )


def test_sdpa_lets_stub_through(fails):
    """Does an untouched stub raise NotImplementedError?"""

    def stub(q, k, v, attn_mask=None):
        raise NotImplementedError()

    fails(check_scaled_dot_product_attention, stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- self-attention


def self_attention_own(x, W_q, W_k, W_v):
    return sdpa_einsum(x @ W_q, x @ W_k, x @ W_v)


def self_attention_fused(x, W_q, W_k, W_v):
    """One matmul for the three projections, then split."""
    dh = W_q.shape[1]
    qkv = x @ torch.cat([W_q, W_k, W_v], dim=1)  # (B, L, 2 Dh + Dv)
    q, k, v = qkv[..., :dh], qkv[..., dh : 2 * dh], qkv[..., 2 * dh :]
    return reference.scaled_dot_product_attention(q, k, v)


def self_attention_qk_swapped(x, W_q, W_k, W_v):
    return sdpa_einsum(x @ W_k, x @ W_q, x @ W_v)


def self_attention_sqrt_d(x, W_q, W_k, W_v):
    return _attend(x @ W_q, x @ W_k, x @ W_v, scale=math.sqrt(x.shape[-1]))


def self_attention_unprojected_values(x, W_q, W_k, W_v):
    out, w = sdpa_einsum(x @ W_q, x @ W_k, x @ W_v)
    return w @ x, w


def test_self_attention_accepts_right_answers():
    """Do the reference, one built on an own attention and a fused-projection one pass?"""
    for candidate in (as_student(reference.self_attention), self_attention_own, self_attention_fused):
        for seed in (0, 1, 2):
            check_self_attention(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (self_attention_qk_swapped, "queries and keys swapped"),
        (self_attention_sqrt_d, "sqrt(D), the model width"),
        (self_attention_unprojected_values, "values are not projected"),
    ],
)
def test_self_attention_names_mistakes(candidate, words, fails):
    """Do swapped queries and keys, the wrong scale and unprojected values fail, named?"""
    fails(check_self_attention, candidate, mistake=words)


@pytest.mark.parametrize("axis", [0, 1])
def test_self_attention_names_every_wrong_axis(axis, fails):
    """Does a softmax over the batch axis or the queries of the scores (B, L, L) fail, named?"""

    def self_attention(x, W_q, W_k, W_v):
        return _attend(x @ W_q, x @ W_k, x @ W_v, dim=axis)

    fails(
        check_self_attention,
        self_attention,
        mistake=variants.SOFTMAX_OVER_QUERIES if axis == 1 else variants.softmax_over(axis),
    )


def test_self_attention_forbids_reference(fails):
    """Does a candidate calling the reference's self_attention fail with ForbiddenCall?"""
    fails(
        check_self_attention,
        lambda x, W_q, W_k, W_v: reference.self_attention(x, W_q, W_k, W_v),
        error=ForbiddenCall,
        match="autograder.reference.self_attention",
    )


def test_self_attention_lets_stub_through(fails):
    """Does an untouched stub raise NotImplementedError?"""

    def stub(x, W_q, W_k, W_v):
        raise NotImplementedError()

    fails(check_self_attention, stub, error=NotImplementedError)


@pytest.mark.parametrize("check", [check_softmax, check_single_query_attention])
def test_softmax_and_single_query_let_stubs_through(check, fails):
    """Do untouched stubs of softmax and single_query_attention raise NotImplementedError?"""

    def stub(*args, **kwargs):
        raise NotImplementedError()

    fails(check, stub, error=NotImplementedError)
