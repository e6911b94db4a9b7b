"""Checks for the sample lab 00-warmup: ``relu`` and ``mean_squared_error``.

The warm-up lab shows the whole path (exercise, check, grading) on two small functions;
the chapter labs follow the same pattern. Shape letters: B batch, D features.
"""

from __future__ import annotations

import torch

from autograder.checks.kit.core import check, random_tensor, writes_back
from autograder.checks.kit.expect import call, expect_close, fail
from autograder.checks.kit.sentinels import forbidden

_RELU_OPS = [
    "torch.relu",
    "torch.relu_",
    "torch.nn.functional.relu",
    "torch.nn.functional.relu_",
    "torch.Tensor.relu",
    "torch.Tensor.relu_",
    "torch.nn.ReLU.forward",
    "torch.clamp",
    "torch.clip",
    "torch.Tensor.clamp",
    "torch.Tensor.clip",
    "torch.clamp_min",
    "torch.Tensor.clamp_min",
]
_BUILD_RELU = "Build relu with torch.where (or a comparison and a product)."

_MSE_OPS = ["torch.nn.functional.mse_loss", "torch.nn.MSELoss.forward"]
_BUILD_MSE = "Build the mean squared error from a difference, a square and a mean."


def _relu(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, x, torch.zeros((), dtype=x.dtype))


@check
def check_relu(relu, seed: int = 0) -> None:
    """Compare ``relu(x)`` with max(x, 0): several shapes, exact zeros, float64; the input
    must not be changed in place."""
    cases = [((4,), torch.float32), ((2, 3, 5), torch.float32), ((3, 7), torch.float64), ((1,), torch.float32)]
    for i, (shape, dtype) in enumerate(cases):
        x = random_tensor(shape, seed * 100 + i, dtype)
        x.view(-1)[0] = 0.0  # relu(0) is 0
        before = x.clone()
        what = f"relu(x) for x of shape {shape}, {str(dtype).replace('torch.', '')} (seed {seed})"
        expected = _relu(x)
        with forbidden(relu, _RELU_OPS, _BUILD_RELU), writes_back(relu, x):
            found = call(relu, x, what=what)
        if not torch.equal(x, before):
            fail(
                what,
                "x left unchanged",
                "x was modified in place",
                mistake="an in-place operation on the input (x[x < 0] = 0 or x.clamp_(...))",
                hint="build a new tensor instead of writing into x.",
            )
        expect_close(
            what,
            found,
            expected,
            atol=0,
            rtol=0,
            mistakes={
                "kept the negative values and zeroed the positive ones": lambda x=x: torch.where(
                    x < 0, x, torch.zeros((), dtype=x.dtype)
                ),
                "returned the absolute value": lambda x=x: x.abs(),
                "returned the 0/1 mask (x > 0) instead of the values": lambda x=x: (x > 0).to(x.dtype),
            },
        )


@check
def check_mean_squared_error(mean_squared_error, seed: int = 0) -> None:
    """Compare ``mean_squared_error(pred, target)`` (a 0-dim tensor, the mean over every
    element) with the reference on several shapes and float64."""
    cases = [((5,), torch.float32), ((2, 3, 4), torch.float32), ((3, 2), torch.float64), ((1,), torch.float32)]
    for i, (shape, dtype) in enumerate(cases):
        pred = random_tensor(shape, seed * 100 + 2 * i, dtype)
        target = random_tensor(shape, seed * 100 + 2 * i + 1, dtype)
        what = f"mean_squared_error(pred, target) for shape {shape}, {str(dtype).replace('torch.', '')} (seed {seed})"
        expected = ((pred - target) ** 2).mean()
        with forbidden(mean_squared_error, _MSE_OPS, _BUILD_MSE):
            found = call(mean_squared_error, pred, target, what=what)
        expect_close(
            what,
            found,
            expected,
            atol=1e-6,
            rtol=1e-5,
            mistakes={
                "summed the squared errors instead of averaging them": lambda pred=pred, target=target: (
                    (pred - target) ** 2
                ).sum(),
                "did not square the differences": lambda pred=pred, target=target: (pred - target).mean(),
                "averaged the absolute differences (that is the mean absolute error)": lambda pred=pred, target=target: (  # noqa: E501
                    (pred - target).abs().mean()
                ),
                "took the square root (that is the root mean squared error)": lambda pred=pred, target=target: (
                    ((pred - target) ** 2).mean().sqrt()
                ),
                "averaged over the last axis only, not over every element": lambda pred=pred, target=target: (
                    (pred - target) ** 2
                ).mean(-1),
                **{
                    f"averaged over dim {dim} only, not over every element (the result is one number)": (
                        lambda pred=pred, target=target, dim=dim: ((pred - target) ** 2).mean(dim)
                    )
                    for dim in range(pred.dim() - 1)
                },  # every other axis of the input
            },
        )
