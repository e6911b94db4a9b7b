"""Tests of the checks of lab 06-masking: right answers pass, usual mistakes fail with a
message that names them, forbidden shortcuts and untouched stubs are caught."""

from __future__ import annotations

import math

import pytest
import torch

from autograder import reference
from autograder.checks import ForbiddenCall
from autograder.checks.kit import variants
from autograder.checks.lab06_masking.leaks_future import check_leaks_future
from autograder.checks.lab06_masking.masking import (
    check_causal_mask,
    check_decoder_self_attention_mask,
    check_masked_attention,
    check_padding_mask,
)
from autograder.reference.leaks import leaks_future
from tests.checks.student_copies import as_student


def _stub(*args, **kwargs):
    raise NotImplementedError()


# ----------------------------------------------------------------------------- masks


def test_reference_masks_pass():
    """Do the reference's three masks pass their checks, for several seeds?"""
    for seed in (0, 1, 2):
        check_padding_mask(as_student(reference.padding_mask), seed=seed)
        check_causal_mask(as_student(reference.causal_mask), seed=seed)
        check_decoder_self_attention_mask(as_student(reference.decoder_self_attention_mask), seed=seed)


@pytest.mark.parametrize(
    "candidate",
    [
        lambda tokens, pad_id: tokens.ne(pad_id).unsqueeze(1).unsqueeze(2),
        lambda tokens, pad_id: (tokens != pad_id).view(tokens.size(0), 1, 1, tokens.size(1)),
    ],
)
def test_valid_padding_masks_pass(candidate):
    """Do an unsqueeze version and a view version pass?"""
    check_padding_mask(candidate, seed=1)


@pytest.mark.parametrize(
    "candidate",
    [
        lambda length: torch.arange(length)[:, None] >= torch.arange(length)[None, :],
        lambda length: ~torch.ones(length, length, dtype=torch.bool).triu(1),
    ],
)
def test_valid_causal_masks_pass(candidate):
    """Do a comparison of aranges and a negated strict upper triangle pass?"""
    check_causal_mask(candidate, seed=1)


def _decoder_mask_by_loops(tgt, pad_id):
    b, t = tgt.shape
    mask = torch.zeros(b, 1, t, t, dtype=torch.bool)
    for n in range(b):
        for i in range(t):
            for j in range(i + 1):
                mask[n, 0, i, j] = bool(tgt[n, j] != pad_id)
    return mask


@pytest.mark.parametrize(
    "candidate",
    [
        lambda tgt, pad_id: reference.padding_mask(tgt, pad_id) & reference.causal_mask(tgt.size(1)),
        _decoder_mask_by_loops,
    ],
)
def test_valid_decoder_masks_pass(candidate):
    """Do a version built from the (allowed) reference masks and a triple loop pass?"""
    check_decoder_self_attention_mask(candidate, seed=2)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda tokens, pad_id: (tokens == pad_id)[:, None, None, :], "polarity inverted"),
        (lambda tokens, pad_id: tokens != pad_id, "add the two broadcast axes"),
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, :, None], "runs along the keys"),
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :].int(), "masks are boolean"),
        (lambda tokens, pad_id: (tokens != 0)[:, None, None, :], "compares with 0 instead of pad_id"),
    ],
)
def test_wrong_padding_masks_are_named(candidate, words, fails):
    """Do inverted polarity, missing axes, the query axis, an int mask and a hard-coded 0 fail by name?"""
    fails(check_padding_mask, candidate, said=words)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1), "diagonal blocked"),
        (lambda n: torch.ones(n, n, dtype=torch.bool).triu(1), "polarity inverted"),
        (lambda n: torch.ones(n, n, dtype=torch.bool).triu(), "transposed"),
        (
            lambda n: torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf")),
            "masks are boolean",
        ),
    ],
)
def test_wrong_causal_masks_are_named(candidate, words, fails):
    """Do a blocked diagonal, inverted polarity, a transpose and a float -inf mask fail by name?"""
    fails(check_causal_mask, candidate, said=words)


def _pad(tgt, pad_id):
    return (tgt != pad_id)[:, None, None, :]


def _causal(t):
    return torch.ones(t, t, dtype=torch.bool).tril()


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda tgt, p: _causal(tgt.size(1)).expand(tgt.size(0), 1, -1, -1), "target padding ignored"),
        (lambda tgt, p: _pad(tgt, p).expand(-1, 1, tgt.size(1), -1), "causal mask missing"),
        (lambda tgt, p: _pad(tgt, p) | _causal(tgt.size(1)), "padding OR causal"),
        (lambda tgt, p: _pad(tgt, p).transpose(-2, -1) & _causal(tgt.size(1)), "queries (rows) instead of the keys"),
        (lambda tgt, p: _causal(tgt.size(1)), "the causal mask alone"),
    ],
)
def test_wrong_decoder_masks_are_named(candidate, words, fails):
    """Do a missing padding mask, a missing causal mask, OR, padded queries and a bare (T, T) fail by name?"""
    fails(check_decoder_self_attention_mask, candidate, said=words)


@pytest.mark.parametrize(
    "check, candidate, words",
    [
        (check_padding_mask, lambda tokens, p: reference.padding_mask(tokens, p), "padding_mask"),
        (check_causal_mask, lambda n: reference.causal_mask(n), "causal_mask"),
        (
            check_causal_mask,
            lambda n: torch.nn.Transformer.generate_square_subsequent_mask(n) == 0,
            "generate_square_subsequent_mask",
        ),
        (
            check_decoder_self_attention_mask,
            lambda tgt, p: reference.decoder_self_attention_mask(tgt, p),
            "decoder_self_attention_mask",
        ),
    ],
)
def test_masks_from_the_reference_are_forbidden(check, candidate, words, fails):
    """Are the reference's masks and PyTorch's subsequent mask caught?"""
    fails(check, candidate, error=ForbiddenCall, match=words)


@pytest.mark.parametrize(
    "check",
    [
        check_padding_mask,
        check_causal_mask,
        check_decoder_self_attention_mask,
        check_masked_attention,
        check_leaks_future,
    ],
)
def test_stubs_raise_not_implemented(check, fails):
    """Does an untouched stub raise NotImplementedError, not a check failure?"""
    fails(check, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- masked_attention


def attention_where(q, k, v, attn_mask=None):
    """The reference's math with torch.softmax; fully masked rows zeroed with torch.where."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if attn_mask is None:
        w = torch.softmax(scores, dim=-1)
    else:
        w = torch.softmax(scores.masked_fill(~attn_mask, float("-inf")), dim=-1)
        w = torch.where(attn_mask.any(-1, keepdim=True), w, torch.zeros_like(w))
    return w @ v, w


def attention_einsum_nan_to_num(q, k, v, attn_mask=None):
    """einsum, and NaN rows turned into zeros."""
    scores = torch.einsum("...id,...jd->...ij", q, k) / q.shape[-1] ** 0.5
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.logical_not(), -math.inf)
    w = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.einsum("...ij,...jd->...id", w, v), w


def attention_float64(q, k, v, attn_mask=None):
    """Computed in float64 and cast back."""
    out, w = attention_where(q.double(), k.double(), v.double(), attn_mask)
    return out.to(q.dtype), w.to(q.dtype)


def _wrong(kind):
    def attention(q, k, v, attn_mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if attn_mask is None:
            w = torch.softmax(scores, -1)
        elif kind == "after":
            w = torch.softmax(scores, -1) * attn_mask
        elif kind == "after, renormalised":
            w = torch.softmax(scores, -1).masked_fill(~attn_mask, 0.0)
            w = w / w.sum(-1, keepdim=True).clamp_min(1e-30)
        elif kind == "finite":
            w = torch.softmax(scores.masked_fill(~attn_mask, -1e4), -1)
        elif kind == "nan":
            w = torch.softmax(scores.masked_fill(~attn_mask, float("-inf")), -1)
        elif kind == "inverted":
            w = torch.softmax(scores.masked_fill(attn_mask, float("-inf")), -1).nan_to_num(0.0)
        return w @ v, w

    return attention


def test_reference_math_passes():
    """Does the reference's own math pass (with torch.softmax, as the lab allows), for several seeds?"""
    for seed in (0, 1, 2, 3):
        check_masked_attention(attention_where, seed=seed)


@pytest.mark.parametrize("candidate", [attention_einsum_nan_to_num, attention_float64])
def test_valid_masked_attention_passes(candidate):
    """Do an einsum version with nan_to_num and a float64 version pass?"""
    check_masked_attention(candidate, seed=1)


@pytest.mark.parametrize(
    "kind, words",
    [
        ("after", variants.MASK_AFTER_SOFTMAX),
        ("finite", variants.MASK_FILLED_FINITE),
        ("nan", variants.NAN_ROWS),
        ("inverted", variants.MASK_INVERTED),
    ],
)
def test_wrong_masked_attention_is_named(kind, words, fails):
    """Do masking after the softmax, a -1e4 fill, NaN rows and inverted polarity fail by name?"""
    fails(check_masked_attention, _wrong(kind), mistake=words)


@pytest.mark.parametrize("ndim, axis", [(4, 0), (4, 1), (4, 2), (3, 0), (3, 1)])
def test_a_softmax_over_each_wrong_axis_is_named(ndim, axis, fails):
    """Does a softmax over each wrong axis of the scores (4-D with heads, 3-D without; right on the
    other inputs) fail, naming the axis used and the keys' wanted?"""

    def attention(q, k, v, attn_mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        w = torch.softmax(scores, axis if q.dim() == ndim else -1).nan_to_num(0.0)  # all -inf: zeros
        return w @ v, w

    words = variants.SOFTMAX_OVER_QUERIES if axis == ndim - 2 else variants.softmax_over(axis)
    fails(check_masked_attention, attention, mistake=words)


def test_renormalised_after_softmax_passes():
    """Does zeroing after the softmax and renormalising (mathematically the same, with
    fully masked rows kept at zero) pass?"""
    check_masked_attention(_wrong("after, renormalised"), seed=2)


def test_finite_fill_leak_is_measurable_with_large_scores():
    """Does a -1e4 fill fail on the large-scores case alone, where no row is fully masked?"""
    from autograder.checks.lab06_masking.masking import _attention_cases

    label, q, k, v, mask = [c for c in _attention_cases(0) if c[0].startswith("large scores")][0]
    assert bool(mask.any(-1).all())
    out, _ = _wrong("finite")(q, k, v, mask)
    expected, _ = reference.scaled_dot_product_attention(q, k, v, mask)
    assert (out - expected).abs().max().item() > 0.1


@pytest.mark.parametrize(
    "candidate, words",
    [
        (
            lambda q, k, v, m=None: (torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m), None),
            "scaled_dot_product_attention",
        ),
        (lambda q, k, v, m=None: reference.scaled_dot_product_attention(q, k, v, m), "scaled_dot_product_attention"),
        (lambda q, k, v, m=None: (reference.softmax(q @ k.transpose(-2, -1), -1) @ v, None), "softmax"),
    ],
)
def test_masked_attention_shortcuts_are_forbidden(candidate, words, fails):
    """Are PyTorch's SDPA, the reference's attention and the reference's (NaN-safe) softmax caught?"""
    fails(check_masked_attention, candidate, error=ForbiddenCall, match=words)


# ----------------------------------------------------------------------------- leaks_future


def leaks_by_noise(layer, d_model, length=8, seed=0):
    """Adds noise after each split point (instead of replacing), last split first."""
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(3, length, d_model, generator=g)
    y = layer(x)
    for t in reversed(range(length - 1)):
        x2 = x.clone()
        x2[:, t + 1 :] += torch.randn(3, length - t - 1, d_model, generator=g)
        if not torch.allclose(layer(x2)[:, : t + 1], y[:, : t + 1], atol=1e-6, rtol=0):
            return True
    return False


def leaks_one_at_a_time(layer, d_model, length=8, seed=0):
    """Changes one later position at a time and compares every earlier output."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, length, d_model, generator=g)
    y = layer(x)
    for j in range(1, length):
        x2 = x.clone()
        x2[:, j] = torch.randn(2, d_model, generator=g)
        if (layer(x2)[:, :j] - y[:, :j]).abs().max() > 1e-6:
            return torch.tensor(True)
    return torch.tensor(False)


def leaks_first_split_only(layer, d_model, length=8, seed=0):
    x = torch.randn(2, length, d_model)
    x2 = x.clone()
    x2[:, 1:] = torch.randn(2, length - 1, d_model)
    return bool((layer(x2)[:, :1] - layer(x)[:, :1]).abs().max() > 1e-6)


def leaks_last_position_only(layer, d_model, length=8, seed=0):
    x = torch.randn(2, length, d_model)
    x2 = x.clone()
    x2[:, -1] = torch.randn(2, d_model)
    return bool((layer(x2)[:, :-1] - layer(x)[:, :-1]).abs().max() > 1e-6)


def leaks_loose_tolerance(layer, d_model, length=8, seed=0):
    """Every split point, but any change below 0.01 is ignored."""
    x = torch.randn(2, length, d_model)
    for t in range(length - 1):
        x2 = x.clone()
        x2[:, t + 1 :] = torch.randn(2, length - t - 1, d_model)
        if (layer(x2)[:, : t + 1] - layer(x)[:, : t + 1]).abs().max() > 1e-2:
            return True
    return False


def leaks_backwards(layer, d_model, length=8, seed=0):
    """Changes the past and looks at the future: the wrong direction."""
    x = torch.randn(2, length, d_model)
    for t in range(1, length):
        x2 = x.clone()
        x2[:, :t] = torch.randn(2, t, d_model)
        if (layer(x2)[:, t:] - layer(x)[:, t:]).abs().max() > 1e-6:
            return True
    return False


def test_reference_leak_test_passes():
    """Does the reference leak test pass its check, for several seeds?"""
    for seed in (0, 1, 2, 3):
        check_leaks_future(as_student(leaks_future), seed=seed)


@pytest.mark.parametrize("candidate", [leaks_by_noise, leaks_one_at_a_time])
def test_valid_leak_tests_pass(candidate):
    """Do a noise-adding version and a one-position-at-a-time version (returning a tensor) pass?"""
    check_leaks_future(candidate, seed=1)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (leaks_first_split_only, "try EVERY split point"),
        (leaks_last_position_only, "try EVERY split point"),
        (leaks_loose_tolerance, "small leak"),
        (leaks_backwards, "was reported as leaking"),
    ],
)
def test_wrong_leak_tests_fail(candidate, words, fails):
    """Do one split point only, a loose tolerance and the reversed direction fail with a hint?"""
    fails(check_leaks_future, candidate, said=words)


def test_leak_test_from_the_reference_is_forbidden(fails):
    """Is the reference's leaks_future caught?"""
    fails(
        check_leaks_future,
        lambda layer, d, length=8: leaks_future(layer, d, length),
        error=ForbiddenCall,
        match="leaks_future",
    )


def test_reference_leak_test_answers():
    """Does the reference leak test say True for full attention and False for causal attention?"""
    w = torch.randn(4, 4)

    def attention(x, mask=None):
        return reference.scaled_dot_product_attention(x @ w, x @ w, x, mask)[0]

    assert leaks_future(attention, 4) is True
    assert leaks_future(lambda x: attention(x, reference.causal_mask(x.size(1))), 4) is False
