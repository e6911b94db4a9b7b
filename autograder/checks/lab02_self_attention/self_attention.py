"""Checks for lab 02-self-attention (chapter 2)."""

from __future__ import annotations

import functools
import math

import torch

from autograder import reference
from autograder.checks.kit import variants
from autograder.checks.kit.core import check, random_tensor
from autograder.checks.kit.expect import call, describe, dtype_name, expect_close, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.variants import NO_SCALE, SCALE_BY_DH, wrong_attention

_SOFTMAX_OPS = [
    "torch.softmax",
    "torch.nn.functional.softmax",
    "torch.Tensor.softmax",
    "torch.special.softmax",
    "torch.log_softmax",
    "torch.nn.functional.log_softmax",
    "torch.Tensor.log_softmax",
    "autograder.reference.softmax",
]
_BUILD_SOFTMAX = "Build softmax from torch.exp, a maximum and a sum."


@check
def check_softmax(softmax, seed: int = 0) -> None:
    """Compare ``softmax(x, dim)`` with the reference: several shapes and axes, large
    inputs (stability), a row of -inf (zeros, not NaN), float64."""
    cases = [
        ((2, 3, 5), -1, 1.0, "float32"),
        ((4, 6), 0, 1.0, "float32"),
        ((3, 7), 1, 1.0, "float64"),
        ((1, 1), -1, 1.0, "float32"),
        ((2, 5), -1, 1000.0, "float32"),  # exp(1000) overflows without the max shift
        ((3, 4), -1, 1.0, "float32"),  # with -inf entries and a row of -inf (a fully masked row)
    ]
    for i, (shape, dim, scale, dtype) in enumerate(cases):
        _check_softmax_case(
            softmax, seed, seed * 100 + i, shape, dim, scale, getattr(torch, dtype), with_inf=i == len(cases) - 1
        )


def _check_softmax_case(
    softmax, seed: int, s: int, shape: tuple, dim: int, scale: float, dtype, with_inf: bool
) -> None:
    __tracebackhide__ = True
    x = random_tensor(shape, s, dtype, scale)
    if with_inf:
        x[0, 1] = x[2, 0] = float("-inf")
        x[1] = float("-inf")
    label = ", with -inf entries and a row of -inf" if with_inf else ""
    what = (
        f"softmax(x, dim={dim}) for x of shape {shape}, {dtype_name(dtype)}, values of size ~{scale:g}{label} "
        f"(seed {seed})"
    )
    expected = reference.softmax(x, dim=dim)
    with forbidden(softmax, _SOFTMAX_OPS, _BUILD_SOFTMAX):
        found = call(softmax, x, dim=dim, what=what)
    mistakes = {}
    if with_inf:
        mistakes[
            "a row of -inf gives NaN (its maximum is -inf and -inf - (-inf) is NaN): "
            "it must give zeros, so shift such rows by 0 and never divide by a zero sum"
        ] = lambda: (
            torch.exp(x - x.amax(dim, keepdim=True)) / torch.exp(x - x.amax(dim, keepdim=True)).sum(dim, keepdim=True)
        )
    mistakes.update(
        {  # every axis of x but dim: the words say which was used and which was wanted
            f"normalised over dim {other} instead of dim {dim}": functools.partial(reference.softmax, x, dim=other)
            for other in variants.wrong_axes(x.dim(), dim)
        }
    )
    mistakes.update(
        {
            "exp(x) not divided by its sum": lambda: torch.exp(x - x.amax(dim, keepdim=True)),
            "the maximum is not subtracted first, so exp overflows to inf and inf/inf gives NaN": lambda: (
                torch.exp(x) / torch.exp(x).sum(dim, keepdim=True)
            ),
        }
    )
    expect_close(what, found, expected, atol=1e-6, rtol=1e-5, mistakes=mistakes)


# ----------------------------------------------------------------------------- attention

_ATTENTION_OPS = [
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention.forward",
    "autograder.reference.single_query_attention",
    "autograder.reference.scaled_dot_product_attention",
    "autograder.reference.self_attention",
    "autograder.reference.MultiHeadAttention",
]
_BUILD_ATTENTION = "Build attention from matrix products (@), a scale and a softmax."
# Self-attention builds the projections; it may call an attention function (the student's own,
# or the reference's scaled_dot_product_attention), but no ready-made self-attention.
_SELF_ATTENTION_OPS = [
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention.forward",
    "autograder.reference.self_attention",
    "autograder.reference.MultiHeadAttention",
]
_BUILD_SELF_ATTENTION = (
    "Project x to queries, keys and values (x @ W_q, ...) and attend with your scaled_dot_product_attention."
)


def _weights(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return reference.softmax(scores, dim=dim)


def _sdpa_variants(q, k, v, mask=None) -> dict:
    """The catalogue of wrong answers for scaled dot-product attention, as (output, weights)."""
    names = [NO_SCALE, SCALE_BY_DH, *(variants.MASK_MISTAKES if mask is not None else ())]
    wrong = {name: functools.partial(wrong_attention, q, k, v, mask, name) for name in names}
    wrong.update(
        {
            name: functools.partial(wrong_attention, q, k, v, mask, name, softmax_dim=dim)
            for name, dim in variants.softmax_axis_mistakes(q.dim()).items()
        }
    )  # scores: as many axes as q
    return wrong


def _compare_attention(what: str, found, expected_out, expected_w, variants: dict, keys: torch.Tensor) -> None:
    """Tuple, then the weights (masking shows there), then the output."""
    __tracebackhide__ = True
    if not isinstance(found, tuple) or len(found) != 2:
        fail(what, "a tuple (output, weights)", describe(found))
    out, w = found
    swapped = "weights and output swapped: return (output, weights)"
    expect_close(
        f"{what}: weights",
        w,
        expected_w,
        mistakes={swapped: expected_out, **{name: (lambda f=f: f()[1]) for name, f in variants.items()}},
    )
    expect_close(
        f"{what}: output",
        out,
        expected_out,
        mistakes={
            swapped: expected_w,
            **{name: (lambda f=f: f()[0]) for name, f in variants.items()},
            "output computed from the keys instead of the values": lambda: expected_w @ keys,
        },
    )


@check
def check_single_query_attention(single_query_attention, seed: int = 0) -> None:
    """Compare ``single_query_attention(q, K, V)`` with the reference: several sizes, one key,
    large scores, float64."""
    cases = [
        (6, 8, 5, 1.0, torch.float32),
        (1, 4, 3, 1.0, torch.float32),
        (9, 16, 16, 3.0, torch.float32),
        (5, 3, 7, 1.0, torch.float64),
    ]
    for i, case in enumerate(cases):
        _check_single_query_case(single_query_attention, seed, seed * 100 + 10 * i, *case)


def _check_single_query_case(
    single_query_attention, seed: int, base: int, lk: int, dh: int, dv: int, scale: float, dtype
) -> None:
    __tracebackhide__ = True
    q = random_tensor((dh,), base, dtype, scale)
    k = random_tensor((lk, dh), base + 1, dtype, scale)
    v = random_tensor((lk, dv), base + 2, dtype)
    what = (
        f"single_query_attention(q, K, V) for q {(dh,)}, K {(lk, dh)}, V {(lk, dv)}, {dtype_name(dtype)} (seed {seed})"
    )
    expected = reference.single_query_attention(q, k, v)
    with forbidden(single_query_attention, _ATTENTION_OPS, _BUILD_ATTENTION):
        found = call(single_query_attention, q, k, v, what=what)
    weights = reference.softmax(k @ q / math.sqrt(dh), dim=-1)
    expect_close(
        what,
        found,
        expected,
        mistakes={
            "returns the attention weights (Lk,) instead of the weighted sum of the values (Dv,)": weights,
            NO_SCALE: lambda: reference.softmax(k @ q, dim=-1) @ v,
            SCALE_BY_DH: lambda: reference.softmax(k @ q / dh, dim=-1) @ v,
            "no softmax: the raw scores weight the values": lambda: (k @ q / math.sqrt(dh)) @ v,
            "the keys are summed instead of the values": lambda: weights @ k,
        },
    )


def _attention_cases(seed: int) -> list:
    """(description, q, k, v, mask) for scaled dot-product attention."""
    out = []
    specs = [
        ((2, 4, 6, 8, 5), None, torch.float32, "no mask, Lq != Lk"),
        ((2, 3, 5, 5, 4, 6), "padding", torch.float32, "heads, padding mask (B, 1, 1, Lk) with a fully padded row"),
        ((1, 5, 5, 4, 3), "causal", torch.float32, "causal mask (Lq, Lk)"),
        ((1, 1, 1, 3, 2), None, torch.float32, "length 1"),
        ((3, 4, 7, 6, 5), "random", torch.float64, "random mask with a fully masked row, float64"),
    ]
    for i, (shape, kind, dtype, label) in enumerate(specs):
        base = seed * 100 + 10 * i
        *lead, lq, lk, dh, dv = shape
        q = random_tensor((*lead, lq, dh), base, dtype)
        k = random_tensor((*lead, lk, dh), base + 1, dtype)
        v = random_tensor((*lead, lk, dv), base + 2, dtype)
        mask = None
        if kind == "padding":
            lengths = torch.tensor([lk - 2, 0])  # the second sequence is all padding
            mask = (torch.arange(lk)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, Lk)
        elif kind == "causal":
            mask = torch.ones(lq, lk, dtype=torch.bool).tril()  # (Lq, Lk)
        elif kind == "random":
            mask = random_tensor((*lead, lq, lk), base + 3) > -0.3
            mask[:, 0] = True  # the first query sees everything
            mask[:, 1, 0] = True
            mask[:, -1] = False  # the last query sees nothing
        out.append((label, q, k, v, mask))
    return out


@check
def check_scaled_dot_product_attention(scaled_dot_product_attention, seed: int = 0) -> None:
    """Compare ``scaled_dot_product_attention(q, k, v, attn_mask=None) -> (output, weights)``
    with the reference: Lq != Lk, extra head dimension, padding and causal masks, fully masked
    rows (zero weights and output, no NaN), length 1, float64."""
    for label, q, k, v, mask in _attention_cases(seed):
        shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        if mask is not None:
            shapes += f", attn_mask {tuple(mask.shape)}"
        what = f"scaled_dot_product_attention, {label}: {shapes}, {dtype_name(q.dtype)} (seed {seed})"
        expected_out, expected_w = reference.scaled_dot_product_attention(q, k, v, mask)
        mistakes = _sdpa_variants(q, k, v, mask)
        with forbidden(scaled_dot_product_attention, _ATTENTION_OPS, _BUILD_ATTENTION):
            found = call(scaled_dot_product_attention, q, k, v, attn_mask=mask, what=what)
        _compare_attention(what, found, expected_out, expected_w, mistakes, k)


@check
def check_self_attention(self_attention, seed: int = 0) -> None:
    """Compare ``self_attention(x, W_q, W_k, W_v) -> (output, weights)`` with the reference:
    D != Dh != Dv, length 1, float64."""
    cases = [(2, 5, 8, 4, 6, torch.float32), (1, 1, 4, 3, 2, torch.float32), (3, 7, 6, 6, 5, torch.float64)]
    for i, case in enumerate(cases):
        _check_self_attention_case(self_attention, seed, seed * 100 + 10 * i, *case)


def _check_self_attention_case(
    self_attention, seed: int, base: int, batch: int, length: int, d: int, dh: int, dv: int, dtype
) -> None:
    __tracebackhide__ = True
    x = random_tensor((batch, length, d), base, dtype)
    w_q = random_tensor((d, dh), base + 1, dtype, d**-0.5)
    w_k = random_tensor((d, dh), base + 2, dtype, d**-0.5)
    w_v = random_tensor((d, dv), base + 3, dtype, d**-0.5)
    what = (
        f"self_attention(x, W_q, W_k, W_v) for x {tuple(x.shape)}, W_q and W_k {(d, dh)}, "
        f"W_v {(d, dv)}, {dtype_name(dtype)} (seed {seed})"
    )
    expected_out, expected_w = reference.self_attention(x, w_q, w_k, w_v)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    mistakes = _sdpa_variants(q, k, v)
    mistakes.update(
        {
            "queries and keys swapped (x @ W_k as queries): the weights come out transposed": lambda: (
                reference.scaled_dot_product_attention(k, q, v)
            ),
            "scores divided by sqrt(D), the model width, instead of sqrt(Dh), the width of q and k": lambda: (
                _weights(q @ k.transpose(-2, -1) / math.sqrt(d)) @ v,
                _weights(q @ k.transpose(-2, -1) / math.sqrt(d)),
            ),
            "the values are not projected: weights @ x instead of weights @ (x @ W_v)": lambda: (
                expected_w @ x,
                expected_w,
            ),
        }
    )
    with forbidden(self_attention, _SELF_ATTENTION_OPS, _BUILD_SELF_ATTENTION):
        found = call(self_attention, x, w_q, w_k, w_v, what=what)
    _compare_attention(what, found, expected_out, expected_w, mistakes, k)
