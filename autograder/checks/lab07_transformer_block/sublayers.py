"""Checks for lab 07-transformer-block (chapter 7), its two sublayers: ``layer_norm`` and the
position-wise feed-forward network, and the reference modules the layers' checks build on
(``seeded_layer``, ``make_candidate``).

``layer_norm`` is compared with the reference and with the usual wrong ways of computing it
(unbiased variance, eps outside the root, statistics over another axis); the FFN with the
reference holding the same weights, in eval mode, then in training mode, where
``dropout.fixed_dropout`` makes the reference and the candidate drop the same entries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder import reference
from autograder.checks.kit import variants as v
from autograder.checks.kit.core import check, generator, random_tensor, seeded
from autograder.checks.kit.dropout import expect_dropout
from autograder.checks.kit.expect import call, dtype_name, expect_close
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.weights import load_reference_weights
from autograder.reference.norms import layer_norm as _reference_layer_norm

_M = TypeVar("_M", bound=nn.Module)
_LAYER_NORM_OPS = [
    "torch.nn.functional.layer_norm",
    "torch.layer_norm",
    "torch.native_layer_norm",
    "torch.nn.LayerNorm.forward",
    "autograder.reference.norms.layer_norm",
    "autograder.reference.LayerNorm",
    # the other norms compute the same thing once x is reshaped so that D is their reduced axis
    "torch.nn.functional.group_norm",
    "torch.group_norm",
    "torch.nn.functional.instance_norm",
    "torch.instance_norm",
    "torch.nn.functional.batch_norm",
    "torch.batch_norm",
    "torch.native_batch_norm",
]
_BUILD_LAYER_NORM = "Build layer_norm from a mean and a (biased) variance over the last dimension."
_FFN_OPS = ["autograder.reference.PositionwiseFeedForward", "torch.nn.TransformerEncoderLayer._ff_block"]
_BUILD_FFN = "Build the FFN from two nn.Linear layers, a ReLU and nn.Dropout."


def seeded_layer(make: Callable[..., _M], seed: int, *args, **kwargs) -> _M:
    """A reference module built from a fixed seed, with LayerNorm gains and shifts that are
    not 1 and 0 (so that a misplaced norm shows), in eval mode."""
    module = seeded(make, seed, *args, **kwargs)
    g = generator(seed + 7)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, reference.LayerNorm):
                sub.weight.copy_(1 + 0.3 * torch.randn(sub.weight.shape, generator=g))
                sub.bias.copy_(0.3 * torch.randn(sub.bias.shape, generator=g))
    return module.eval()


def make_candidate(candidate: type, args: tuple, ref: nn.Module, what: str, **kwargs) -> nn.Module:
    """``candidate(*args, **kwargs)`` holding the weights of ``ref``, in its dtype, in eval mode."""
    __tracebackhide__ = True
    module = call(candidate, *args, what=what, **kwargs)
    load_reference_weights(module, ref, what)
    return module.to(next(ref.parameters()).dtype).eval()


# ----------------------------------------------------------------------------- layer_norm


def _layer_norm_mistakes(x: Tensor, w: Tensor, b: Tensor, eps: float) -> dict[str, Any]:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return {
        "unbiased variance (divided by D - 1, as torch.var and torch.std do by default); "
        "LayerNorm uses the biased variance (divide by D)": lambda: (
            (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b
        ),
        "eps outside the square root, (x - mean) / (sqrt(var) + eps); it belongs inside, sqrt(var + eps)": lambda: (
            (x - mean) / (torch.sqrt(var) + eps) * w + b
        ),
        "statistics over the batch axis (BatchNorm): LayerNorm normalises each position over its own "
        "D features": lambda: v.batch_stats_norm(x, w, b, eps),
        "eps left out, so a constant row gives 0 / 0 = NaN": lambda: (x - mean) / torch.sqrt(var) * w + b,
        "the mean is not subtracted": lambda: x / torch.sqrt(var + eps) * w + b,
        "divided by the variance instead of the standard deviation": lambda: (x - mean) / (var + eps) * w + b,
        "weight and bias not applied": lambda: (x - mean) / torch.sqrt(var + eps),
        "weight and bias swapped": lambda: (x - mean) / torch.sqrt(var + eps) * b + w,
        **{v.NORM_OVER.format(d): (lambda d=d: v.norm_over(x, w, b, eps, d)) for d in v.wrong_axes(x.dim(), -1)},
    }


@check
def check_layer_norm(layer_norm, seed: int = 0) -> None:
    """Compare ``layer_norm(x, weight, bias, eps)`` with the reference: several shapes,
    length 1, values with a small variance (where eps matters), a large eps, a constant
    row (bias, not NaN), float64."""
    cases = [  # shape, dtype, scale, shift, eps
        ((2, 3, 8), torch.float32, 1.0, 0.0, 1e-5),
        ((4, 16), torch.float64, 2.0, 3.0, 1e-5),
        ((1, 1, 6), torch.float32, 1.0, 0.5, 1e-5),
        ((2, 5, 8), torch.float32, 0.01, 0.0, 1e-5),  # var ~ 1e-4: sqrt(var + eps) != sqrt(var) + eps
        ((3, 4, 6), torch.float64, 1.0, 0.0, 0.1),
    ]
    for i, (shape, dtype, scale, shift, eps) in enumerate(cases):
        s = seed * 100 + i
        x = random_tensor(shape, s, dtype, scale) + shift
        if i == 2 or i == 4:
            x[0, 0] = 1.5  # a constant row: zero variance
        w = 1 + 0.5 * random_tensor(shape[-1:], s + 50, dtype)
        b = 0.5 * random_tensor(shape[-1:], s + 60, dtype)
        what = (
            f"layer_norm(x, weight, bias, eps={eps:g}) for x of shape {shape}, {dtype_name(dtype)}, "
            f"values ~{shift:g} +- {scale:g} (seed {seed})"
        )
        expected = _reference_layer_norm(x, w, b, eps)
        with forbidden(layer_norm, _LAYER_NORM_OPS, _BUILD_LAYER_NORM):
            found = call(layer_norm, x, w, b, eps, what=what)
        expect_close(what, found, expected, mistakes=_layer_norm_mistakes(x, w, b, eps), atol=1e-5, rtol=1e-4)


# ----------------------------------------------------------------------------- feed-forward


@check
def check_positionwise_feed_forward(PositionwiseFeedForward, seed: int = 0) -> None:
    """Build ``PositionwiseFeedForward(d_model, d_ff, dropout)``, copy the reference's weights
    in, compare outputs in eval mode (several sizes, length 1, float64), then in training mode
    with the same entries dropped as in the reference (dropout on the hidden units)."""
    cases = [(8, 32, 2, 5, torch.float32), (6, 24, 1, 1, torch.float32), (4, 16, 3, 7, torch.float64)]
    for i, case in enumerate(cases):
        _check_ffn_case(PositionwiseFeedForward, seed, seed * 100 + i, *case)
    ref = seeded_layer(reference.PositionwiseFeedForward, seed, 8, 64, 0.5).double().train()
    x = random_tensor((2, 6, 8), seed, torch.float64)
    what = (
        f"PositionwiseFeedForward(d_model=8, d_ff=64, dropout=0.5) on x (2, 6, 8), float64, in training mode "
        f"(dropout drawn from the check's seed {seed})"
    )

    def dropped(t: Tensor) -> Tensor:
        return F.dropout(t, 0.5)

    with forbidden(PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN):
        module = make_candidate(PositionwiseFeedForward, (8, 64, 0.5), ref, what)
    expect_dropout(
        what,
        module,
        (x,),
        seed,
        lambda: ref(x),
        {
            v.FFN_DROPOUT_NOT_APPLIED: lambda: ref.linear2(torch.relu(ref.linear1(x))),
            v.DROPOUT_IN_FFN_ONLY_AT_OUTPUT: lambda: dropped(ref.linear2(torch.relu(ref.linear1(x)))),
            v.DROPOUT_ON_FFN_INPUT: lambda: ref.linear2(torch.relu(ref.linear1(dropped(x)))),
        },
        {(2, 6, 64): ("the hidden units (B, L, F)", 1)},
        (PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN),
        atol=1e-10,
        rtol=1e-8,
    )


def _check_ffn_case(PositionwiseFeedForward, seed: int, s: int, d: int, f: int, b: int, length: int, dtype) -> None:
    __tracebackhide__ = True
    what = (
        f"PositionwiseFeedForward(d_model={d}, d_ff={f}, dropout=0.1) on x of shape {(b, length, d)}, "
        f"{dtype_name(dtype)}, eval mode (seed {seed})"
    )
    ref = seeded_layer(reference.PositionwiseFeedForward, s, d, f, 0.1).to(dtype)
    x = random_tensor((b, length, d), s, dtype)
    expected = ref(x)
    lin1, lin2 = ref.linear1, ref.linear2
    mistakes = {
        "no ReLU between the two linear layers": lambda: lin2(lin1(x)),
        "ReLU after the second linear layer as well": lambda: torch.relu(ref(x)),
        "ReLU after the second linear layer instead of after the first": lambda: torch.relu(lin2(lin1(x))),
    }
    with forbidden(PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN):
        module = make_candidate(PositionwiseFeedForward, (d, f, 0.1), ref, what)
        found = call(module, x, what=what)
    expect_close(what, found, expected, mistakes=mistakes)
