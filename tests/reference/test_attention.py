"""Softmax and scaled dot-product attention against PyTorch's own (chapter 2)."""

import pytest
import torch
import torch.nn.functional as F

from autograder import reference as ref

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float64: dict(atol=1e-10, rtol=1e-10)}


def _qkv(dtype, b=2, h=3, lq=5, lk=7, dh=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, n, dh, generator=g, dtype=dtype) for n in (lq, lk, lk)]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_equals_torch(dim):
    """Does the hand-written softmax equal torch.softmax along every axis?"""
    x = torch.randn(4, 5, 6, dtype=torch.float64)
    torch.testing.assert_close(ref.softmax(x, dim), torch.softmax(x, dim), atol=1e-12, rtol=1e-12)


def test_softmax_is_stable_for_large_inputs():
    """Do inputs of size 1e4 give finite probabilities that sum to one?"""
    x = torch.tensor([[1e4, 1e4 - 1.0, -1e4]])
    p = ref.softmax(x)
    assert torch.isfinite(p).all()
    torch.testing.assert_close(p, torch.softmax(x, -1))


def test_softmax_of_all_minus_inf_is_zero():
    """Does a row of -inf (fully masked) give zeros instead of NaN?"""
    x = torch.full((2, 4), float("-inf"))
    x[1, 0] = 0.0
    assert torch.equal(ref.softmax(x), torch.tensor([[0.0] * 4, [1.0, 0.0, 0.0, 0.0]]))


def _masks(lq, lk, b):
    pad = torch.ones(b, 1, 1, lk, dtype=torch.bool)
    pad[0, ..., -2:] = False
    causal = torch.ones(lq, lk, dtype=torch.bool).tril()
    return {"none": None, "padding": pad, "causal": causal, "both": pad & causal}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal", "both"])
def test_sdpa_equals_pytorch(dtype, mask_kind):
    """Does our attention equal F.scaled_dot_product_attention with every kind of mask?"""
    q, k, v = _qkv(dtype, lq=6, lk=6)
    mask = _masks(6, 6, 2)[mask_kind]
    out, weights = ref.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **TOL[dtype])
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)), **TOL[dtype])


def test_fully_masked_row_gives_zero_weights_and_output():
    """Does a query that may attend nowhere get zero weights and a zero output, not NaN?"""
    q, k, v = _qkv(torch.float32, b=1, h=1, lq=3, lk=4)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    out, weights = ref.scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any()
    assert torch.equal(weights[0, 0, 1], torch.zeros(4)) and torch.equal(out[0, 0, 1], torch.zeros(8))


def test_masked_keys_get_exactly_zero_weight():
    """Are masked keys given exactly zero weight (masking before the softmax)?"""
    q, k, v = _qkv(torch.float32)
    mask = _masks(5, 7, 2)["padding"]
    _, weights = ref.scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(weights[0, ..., -2:], torch.zeros_like(weights[0, ..., -2:]))


def test_sdpa_rejects_non_boolean_masks():
    """Is a float mask refused with a message naming the convention?"""
    q, k, v = _qkv(torch.float32)
    with pytest.raises(TypeError, match="True = may attend"):
        ref.scaled_dot_product_attention(q, k, v, torch.zeros(5, 7))


def test_sdpa_rejects_mismatched_shapes():
    """Does a key of the wrong width give an error naming both shapes?"""
    q, k, v = _qkv(torch.float32)
    with pytest.raises(ValueError, match=r"q \(2, 3, 5, 8\)"):
        ref.scaled_dot_product_attention(q, k[..., :4], v)


def test_sdpa_gradcheck():
    """Are the gradients of attention (with a mask) right, by finite differences in float64?"""
    q, k, v = (t.requires_grad_() for t in _qkv(torch.float64, b=1, h=2, lq=3, lk=4, dh=3))
    mask = torch.ones(3, 4, dtype=torch.bool).tril(1)
    assert torch.autograd.gradcheck(lambda *a: ref.scaled_dot_product_attention(*a, mask)[0], (q, k, v))


def test_single_query_and_self_attention_agree_with_matrix_form():
    """Do the single-query form and self_attention with raw weights match the matrix form?"""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 5, 6, generator=g, dtype=torch.float64)
    w_q, w_k, w_v = (torch.randn(6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    out, _ = ref.self_attention(x, w_q, w_k, w_v)
    q, k, v = x[0] @ w_q, x[0] @ w_k, x[0] @ w_v
    for i in range(5):
        torch.testing.assert_close(ref.single_query_attention(q[i], k, v), out[0, i])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v))
