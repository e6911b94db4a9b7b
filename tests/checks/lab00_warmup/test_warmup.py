"""Tests of the warm-up lab's checks: the reference passes, valid alternatives pass, wrong
answers fail with the message that names their mistake, and the blocked ops are caught."""

from __future__ import annotations

import pytest
import torch

from autograder.checks import check_mean_squared_error, check_relu


@pytest.mark.parametrize(
    "relu",
    [
        lambda x: torch.where(x > 0, x, torch.zeros_like(x)),
        lambda x: x * (x > 0),
        lambda x: (x + x.abs()) / 2,
        lambda x: torch.maximum(x, torch.zeros_like(x)),
    ],
    ids=["where", "mask-product", "abs", "maximum"],
)
def test_valid_relus_pass(relu) -> None:
    """Do the reference and equivalent relus pass for several seeds?"""
    for seed in (0, 1, 2):
        check_relu(relu, seed=seed)


@pytest.mark.parametrize(
    "relu, phrase",
    [
        (lambda x: x.abs(), "returned the absolute value"),
        (lambda x: torch.where(x < 0, x, torch.zeros_like(x)), "kept the negative values"),
        (lambda x: (x > 0).to(x.dtype), "0/1 mask"),
        (lambda x: x.masked_fill_(x < 0, 0.0), "in-place"),
        (lambda x: torch.where(x > 0, x, 0.0).float(), "dtype"),
        (lambda x: x[..., :1], "shape"),
    ],
    ids=["abs", "negatives", "mask", "in-place", "float32", "shape"],
)
def test_wrong_relus_fail_naming_the_mistake(relu, phrase: str, fails) -> None:
    """Does a wrong relu fail with a message naming its mistake?"""
    fails(check_relu, relu, said=phrase)


@pytest.mark.parametrize(
    "relu",
    [torch.relu, lambda x: torch.nn.functional.relu(x), lambda x: x.clamp(min=0), lambda x: torch.clip(x, 0)],
    ids=["itself", "F.relu", "clamp", "clip"],
)
def test_relu_built_from_torch_relu_is_refused(relu, fails) -> None:
    """Is a relu that calls (or is) PyTorch's own relu or clamp refused?"""
    fails(check_relu, relu, said="Build relu")


def test_untouched_stub_raises_not_implemented(fails) -> None:
    """Does an untouched stub's NotImplementedError pass through unchanged?"""

    def relu(x):
        raise NotImplementedError()

    fails(check_relu, relu, error=NotImplementedError)


@pytest.mark.parametrize(
    "mse",
    [
        lambda p, t: ((p - t) ** 2).mean(),
        lambda p, t: torch.einsum("...,...->", p - t, p - t) / p.numel(),
        lambda p, t: (p - t).pow(2).sum() / (p - t).numel(),
    ],
    ids=["mean", "einsum", "sum-over-numel"],
)
def test_valid_mean_squared_errors_pass(mse) -> None:
    """Do equivalent mean squared errors pass for several seeds?"""
    for seed in (0, 1, 2):
        check_mean_squared_error(mse, seed=seed)


@pytest.mark.parametrize(
    "mse, phrase",
    [
        (lambda p, t: ((p - t) ** 2).sum(), "summed the squared errors"),
        (lambda p, t: (p - t).abs().mean(), "mean absolute error"),
        (lambda p, t: ((p - t) ** 2).mean().sqrt(), "root mean squared error"),
        (lambda p, t: (p - t).mean(), "did not square"),
        (lambda p, t: ((p - t) ** 2).mean(-1), "last axis only"),
    ],
    ids=["sum", "mae", "rmse", "no-square", "last-axis"],
)
def test_wrong_mean_squared_errors_fail_naming_the_mistake(mse, phrase: str, fails) -> None:
    """Does a wrong mean squared error fail with a message naming its mistake?"""
    fails(check_mean_squared_error, mse, said=phrase)


@pytest.mark.parametrize("shape, axis", [((2, 3, 4), 0), ((2, 3, 4), 1), ((3, 2), 0)])
def test_a_mean_over_each_other_axis_is_named(shape, axis, fails) -> None:
    """Does a mean over each axis but the last of each input (right on the other inputs) fail, naming the axis?"""

    def mse(p, t):
        return ((p - t) ** 2).mean(axis) if tuple(p.shape) == shape else ((p - t) ** 2).mean()

    fails(check_mean_squared_error, mse, mistake=f"averaged over dim {axis} only, not over every element")


@pytest.mark.parametrize(
    "mse",
    [
        torch.nn.functional.mse_loss,
        lambda p, t: torch.nn.functional.mse_loss(p, t),
        lambda p, t: torch.nn.MSELoss()(p, t),
    ],
    ids=["itself", "F.mse_loss", "MSELoss"],
)
def test_mse_loss_is_refused(mse, fails) -> None:
    """Is a mean squared error that calls (or is) PyTorch's mse_loss refused?"""
    fails(check_mean_squared_error, mse, said="Build the mean squared error")
