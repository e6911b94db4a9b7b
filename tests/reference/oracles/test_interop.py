"""Tests of autograder.reference.oracles.interop: PyTorch's layers holding our weights, and our masks
as theirs, compute what the reference computes."""

from __future__ import annotations

import pytest
import torch

from autograder import reference
from autograder.reference.oracles.interop import torch_attn_mask, torch_layer_like


@pytest.mark.parametrize("norm_first", [False, True])
def test_torch_layer_like_matches_reference(norm_first):
    """Does PyTorch's decoder layer, with our weights packed in and our masks inverted, give
    the reference's output?"""
    torch.manual_seed(0)
    ref = reference.DecoderLayer(8, 2, 16, norm_first=norm_first).eval()
    y, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    tgt_mask = reference.causal_mask(4)
    memory_mask = (torch.arange(6) < torch.tensor([6, 3])[:, None])[:, None, None, :]
    expected = ref(y, memory, tgt_mask, memory_mask)
    found = torch_layer_like(ref)(
        y, memory, tgt_mask=torch_attn_mask(tgt_mask, 2, 2, 4, 4), memory_mask=torch_attn_mask(memory_mask, 2, 2, 4, 6)
    )
    torch.testing.assert_close(found, expected, atol=1e-5, rtol=1e-4)


def test_torch_attn_mask_blocks_what_we_forbid():
    """Is True (may attend) turned into False (not blocked), one copy per head?"""
    mask = reference.causal_mask(3)
    out = torch_attn_mask(mask, 2, 4, 3, 3)
    assert out.shape == (8, 3, 3)
    assert torch.equal(out[5], ~mask)
