"""Tiled attention with an online softmax (chapter 10) against the full computation and PyTorch's SDPA."""

import pytest
import torch
import torch.nn.functional as F

from autograder import reference as ref
from autograder.reference.tiled import online_softmax, tiled_attention


def _x(shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("tile", [1, 3, 8, 64])
def test_online_softmax_equals_softmax(tile):
    """Does the two-pass online softmax equal torch.softmax, large values and -inf rows included?"""
    x = _x((4, 19)) * 50
    x[1] = float("-inf")
    x[2, :10] = float("-inf")
    expected = ref.softmax(x, -1)
    torch.testing.assert_close(online_softmax(x, tile), expected, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(expected[[0, 2, 3]], torch.softmax(x[[0, 2, 3]], -1), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("tile", [1, 2, 5, 7, 100])
def test_tiled_equals_sdpa_causal_and_padded(tile):
    """Does tiled_attention equal SDPA, with causal and padding masks, for tiles that do and do not divide Lk?"""
    q, k, v = _x((2, 3, 7, 8), 0), _x((2, 3, 7, 8), 1), _x((2, 3, 7, 8), 2)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    pad = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    pad[1, ..., 4:] = False
    for mask in (None, causal, causal & pad):
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(tiled_attention(q, k, v, mask, tile), expected, atol=1e-12, rtol=1e-12)


def test_tiled_fully_masked_rows_give_zeros():
    """Does a fully masked row give zeros (as the course's attention does), never NaN, in float32 too?"""
    q, k, v = (_x((1, 2, 4, 8), s, torch.float32) for s in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False
    mask[0, :2] = False  # the first tiles of row 0 are masked: its running maximum starts at -inf
    out = tiled_attention(q, k, v, mask, tile=2)
    assert torch.isfinite(out).all() and (out[..., 2, :] == 0).all()
    torch.testing.assert_close(out, ref.scaled_dot_product_attention(q, k, v, mask)[0])


def test_tiled_large_scores_do_not_overflow():
    """Do scores in the thousands (a later tile with a larger maximum) stay finite and exact?"""
    q, k, v = _x((1, 1, 3, 4)) * 100, _x((1, 1, 9, 4), 1) * 100, _x((1, 1, 9, 4), 2)
    expected = ref.scaled_dot_product_attention(q, k, v)[0]
    torch.testing.assert_close(tiled_attention(q, k, v, tile=2), expected, atol=1e-10, rtol=1e-10)
