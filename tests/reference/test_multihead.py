"""Multi-head attention against nn.MultiheadAttention (chapter 4)."""

import pytest
import torch

from autograder import reference as ref
from autograder.reference.oracles.interop import torch_mha_from

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float64: dict(atol=1e-10, rtol=1e-10)}


def test_split_and_merge_heads_are_inverse():
    """Does merge_heads(split_heads(x)) give x back, with head h holding columns h*Dh:(h+1)*Dh?"""
    x = torch.randn(2, 5, 12)
    heads = ref.split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    assert torch.equal(heads[:, 1], x[..., 4:8])
    assert torch.equal(ref.merge_heads(heads), x)


def test_split_heads_rejects_indivisible_width():
    """Is a width not divisible by the number of heads refused with both numbers named?"""
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=3"):
        ref.split_heads(torch.randn(1, 2, 10), 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("masked", ["none", "padding", "causal"])
def test_mha_equals_pytorch(dtype, masked):
    """With the weights copied, does our MultiHeadAttention equal nn.MultiheadAttention,
    the masks inverted to PyTorch's True = blocked?"""
    torch.manual_seed(0)
    ours = ref.MultiHeadAttention(16, 4).to(dtype)
    theirs = torch_mha_from(ours, 4)
    q, kv = torch.randn(2, 5, 16, dtype=dtype), torch.randn(2, 7, 16, dtype=dtype)
    kwargs, mask = {}, None
    if masked == "padding":
        keep = torch.ones(2, 7, dtype=torch.bool)
        keep[1, -3:] = False
        mask = keep[:, None, None, :]
        kwargs["key_padding_mask"] = ref.to_pytorch_mask(keep)
    elif masked == "causal":
        kv = torch.randn(2, 5, 16, dtype=dtype)
        mask = ref.causal_mask(5)
        kwargs["attn_mask"] = ref.to_pytorch_mask(mask)
    expected, weights = theirs(q, kv, kv, average_attn_weights=False, **kwargs)
    torch.testing.assert_close(ours(q, kv, kv, mask), expected, **TOL[dtype])
    torch.testing.assert_close(ours.attn_weights, weights, **TOL[dtype])
