"""Checks for lab 02-self-attention (chapter 2)."""

from __future__ import annotations

from autograder import reference
from autograder.checks.core import call, check, expect_close, forbidden, random_tensor

_SOFTMAX_OPS = [
    "torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax", "torch.special.softmax",
    "torch.log_softmax", "torch.nn.functional.log_softmax", "torch.Tensor.log_softmax",
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
    ]
    for i, (shape, dim, scale, dtype) in enumerate(cases):
        import torch

        x = random_tensor(shape, seed * 100 + i, getattr(torch, dtype), scale)
        what = f"softmax(x, dim={dim}) for x of shape {shape}, {dtype}, values of size ~{scale:g} (seed {seed})"
        expected = reference.softmax(x, dim=dim)
        with forbidden(softmax, _SOFTMAX_OPS, _BUILD_SOFTMAX):
            found = call(softmax, x, dim=dim, what=what)
        other = 0 if dim in (-1, x.dim() - 1) else -1
        expect_close(what, found, expected, atol=1e-6, rtol=1e-5, mistakes={
            f"normalised over dim {other} instead of dim {dim}": lambda: reference.softmax(x, dim=other),
            "exp(x) not divided by its sum": lambda: torch.exp(x - x.amax(dim, keepdim=True)),
            "the maximum is not subtracted first, so exp overflows to inf and inf/inf gives NaN":
                lambda: torch.exp(x) / torch.exp(x).sum(dim, keepdim=True),
        })
