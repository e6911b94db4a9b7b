"""Tests of the reference leak test (autograder/reference/leaks.py, chapter 6)."""

from __future__ import annotations

import torch

from autograder import reference
from autograder.reference.leaks import leaks_future


def _attention(mask_fn):
    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    return lambda x: reference.scaled_dot_product_attention(x @ w, x @ w, x, mask_fn(x.size(1)))[0]


def test_full_attention_leaks_and_causal_does_not():
    """Does the test say True for unmasked attention and False for causally masked attention?"""
    assert leaks_future(_attention(lambda n: None), 4) is True
    assert leaks_future(_attention(reference.causal_mask), 4) is False


def test_a_leak_at_one_split_point_is_found():
    """Is a leak found when only output L-2 sees input L-1, and when only output 0 sees input 1?"""

    def late(x):
        y = x.clone()
        y[:, -2] += x[:, -1]
        return y

    def early(x):
        y = x.clone()
        y[:, 0] += x[:, 1]
        return y

    assert leaks_future(late, 3, length=9) is True
    assert leaks_future(early, 3, length=9) is True


def test_backward_looking_layers_do_not_leak():
    """Do a cumulative sum and a shift to the right count as causal?"""
    assert leaks_future(lambda x: x.cumsum(1), 3) is False
    assert leaks_future(lambda x: torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], 1), 3) is False


def test_tolerance_decides_small_leaks():
    """Is a leak of size 1e-3 found with the default tolerance and ignored with atol=1e-2?"""

    def small(x):
        return x + 1e-3 * x.mean(1, keepdim=True).tanh()

    assert leaks_future(small, 3) is True
    assert leaks_future(small, 3, atol=1e-2) is False
