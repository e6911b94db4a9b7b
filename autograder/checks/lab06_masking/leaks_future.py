"""Checks for lab 06-masking (chapter 6), the leak test: ``leaks_future(layer, d_model, length)``
on a catalogue of small layers, some that let a position see later ones (full attention, a
cumulative sum, a leak at one split point only, a small leak) and some that do not (causal
attention, a position-wise MLP, a backward-looking layer).

Shape letters: B batch, L length, D d_model.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator
from autograder.checks.kit.expect import call, describe, expect_equal, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.reference.leaks import leaks_future as _reference_leaks_future


def _layers(d: int, seed: int) -> list[tuple[str, Callable[[Tensor], Tensor]]]:
    """The layers ``check_leaks_future`` asks about, each named for what it does: a catalogue of
    eight small closures over the same weights, long only because each entry takes a few lines."""
    g = generator(seed)
    w_q, w_k, w_v = (torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(3))
    w_1, w_2 = torch.randn(d, 2 * d, generator=g) / math.sqrt(d), torch.randn(2 * d, d, generator=g) / math.sqrt(d)

    def need(x: Tensor) -> None:
        if x.dim() != 3 or x.size(-1) != d:
            raise ValueError(f"this layer takes x of shape (B, L, {d}), got {tuple(x.shape)}")

    def causal_attention(x: Tensor) -> Tensor:
        need(x)
        mask = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()
        return reference.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)[0]

    def full_attention(x: Tensor) -> Tensor:
        need(x)
        return reference.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)[0]

    def mlp(x: Tensor) -> Tensor:
        need(x)
        return torch.relu(x @ w_1) @ w_2

    def cumsum(x: Tensor) -> Tensor:
        need(x)
        return x.cumsum(1)

    def leak_at_last(x: Tensor) -> Tensor:
        need(x)
        y = x.clone()
        y[:, -2] = y[:, -2] + x[:, -1]
        return y

    def leak_at_first(x: Tensor) -> Tensor:
        need(x)
        y = x.clone()
        y[:, 0] = y[:, 0] + x[:, 1]
        return y

    def backward_only(x: Tensor) -> Tensor:
        need(x)
        return x + torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)

    def tiny_leak(x: Tensor) -> Tensor:
        need(x)
        return causal_attention(x) + 1e-3 * x.mean(1, keepdim=True)

    return [
        ("causally masked self-attention", causal_attention),
        ("self-attention without a mask", full_attention),
        ("a position-wise MLP", mlp),
        ("a cumulative sum over positions, y[t] = x[0] + ... + x[t]", cumsum),
        ("a layer whose only leak is y[L-2] += x[L-1] (found only at the split point t = L-2)", leak_at_last),
        ("a layer whose only leak is y[0] += x[1] (found only at the split point t = 0)", leak_at_first),
        ("a layer that looks backward only, y[t] = x[t] + x[t-1]", backward_only),
        ("causal attention plus 0.001 times the mean over all positions (a small leak)", tiny_leak),
    ]


@check
def check_leaks_future(leaks_future, seed: int = 0) -> None:
    """Run ``leaks_future(layer, d_model, length=...)`` on layers that leak and layers that
    do not: causal attention, full attention, a position-wise MLP, a cumulative sum, layers
    that leak at one split point only, a backward-looking layer, a small leak."""
    for d, length in ((6, 8), (4, 5 + seed % 4)):
        for label, layer in _layers(d, seed * 10 + d):
            what = f"leaks_future(layer, d_model={d}, length={length}) for {label} (seed {seed})"
            expected = _reference_leaks_future(layer, d, length=length)
            with forbidden(
                leaks_future,
                ["autograder.reference.leaks.leaks_future"],
                "Perturb the inputs yourself and compare the outputs.",
            ):
                found = call(leaks_future, layer, d, length=length, what=what)
            if isinstance(found, Tensor) and found.numel() == 1 and found.dtype == torch.bool:
                found = bool(found)
            if not isinstance(found, bool):
                fail(
                    what,
                    "a bool (True or False)",
                    describe(found),
                    hint="return a Python bool: bool(...) of a comparison.",
                )
            hint = None
            if found != expected:
                hint = (
                    "a layer that does not leak was reported as leaking: change only positions AFTER t "
                    "and compare only outputs at positions 0..t, with a tolerance for round-off."
                    if not expected
                    else "this leak was missed: try EVERY split point t in 0..L-2 (change the inputs after t, "
                    "compare the outputs up to t), and count any change above about 1e-6 as a leak."
                )
            expect_equal(what, found, expected, hint=hint)
