"""Checks for lab 08-encoder-decoder (chapter 8), the label-smoothed loss: padded targets, a
fully padded row, large logits, float64, its value and its gradient. ``smoothed_loss``
computes the wrong variants that name a mistake (the wrong mean, mass on the padding id, no
smoothing, a KL term with no gradient, a naive log-softmax); ``training``'s check of the
training step uses it too.

Shape letters: B batch, T target length, V vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder import reference
from autograder.checks.kit import variants
from autograder.checks.kit.core import check, expect_loss, logits_and_targets
from autograder.checks.kit.expect import dtype_name


def smoothed_loss(
    logits: Tensor,
    target: Tensor,
    smoothing: float,
    pad_id: int,
    *,
    off: float | None = None,
    pad_mass: bool = False,
    true_extra: float = 0.0,
    reduce: str = "mean",
    kl: str = "",
    naive_log: bool = False,
    axis: int = -1,
) -> Tensor:
    """Variants of the smoothed cross-entropy, for naming mistakes (``axis``: log_softmax's)."""
    vocab = logits.size(-1)
    if naive_log:
        logp = torch.log(
            torch.exp(logits - logits.amax(-1, keepdim=True))
            / torch.exp(logits - logits.amax(-1, keepdim=True)).sum(-1, keepdim=True)
        )
    else:
        logp = F.log_softmax(logits.double(), dim=axis)  # (B, T, V)
    q = torch.full_like(logp, smoothing / (vocab - 2) if off is None else off)
    if not pad_mass:
        q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing + true_extra)  # (B, T, V)
    per_token = -(q * logp).sum(-1)  # (B, T)
    if kl == "xlogy":
        per_token = per_token + torch.special.xlogy(q, q).sum(-1)
    elif kl == "naive":
        per_token = (q * (torch.log(q) - logp)).sum(-1)
    keep = target != pad_id
    if reduce == "all":
        return per_token.mean()
    if reduce == "numel":
        return (per_token * keep).sum() / per_token.numel()
    if reduce == "sum":
        return (per_token * keep).sum()
    if reduce == "none":
        return per_token
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def _loss_mistakes(logits: Tensor, target: Tensor, s: float, pad: int) -> dict:
    v = logits.size(-1)
    a = (logits, target, s, pad)
    return {
        "padding counted in the mean (average over non-pad target tokens only)": lambda: smoothed_loss(
            *a, reduce="numel"
        ),
        "padding positions' losses counted in the mean": lambda: smoothed_loss(*a, reduce="all"),
        "smoothing mass given to the padding token (it must get 0; the other V - 2 get smoothing / (V - 2))": lambda: (
            smoothed_loss(*a, off=s / (v - 1), pad_mass=True)
        ),
        "smoothing / (V - 1) instead of smoothing / (V - 2) (padding and the true token both excluded)": lambda: (
            smoothed_loss(*a, off=s / (v - 1))
        ),
        "PyTorch's convention (smoothing / V on every token, the true one and padding included)": lambda: smoothed_loss(
            *a, off=s / v, pad_mass=True, true_extra=s / v
        ),
        "no label smoothing (plain cross-entropy)": lambda: smoothed_loss(logits, target, 0.0, pad),
        "summed over tokens instead of averaged": lambda: smoothed_loss(*a, reduce="sum"),
        "per-token losses returned, not averaged": lambda: smoothed_loss(*a, reduce="none"),
        "the KL divergence returned instead of the cross-entropy (they differ by the target's entropy, "
        "a constant with no gradient)": lambda: smoothed_loss(*a, kl="xlogy"),
        "log of zero: 0 * log(0) of the padding column's zero probability gives NaN "
        "(drop the zero entries, or use torch.special.xlogy)": lambda: smoothed_loss(*a, kl="naive"),
        "log of zero: log(softmax(x)) underflows to log(0) = -inf for large logits; use log_softmax": lambda: (
            smoothed_loss(*a, naive_log=True)
        ),
        **{
            variants.LOG_SOFTMAX_OVER.format(dim): (lambda dim=dim: smoothed_loss(*a, axis=dim))
            for dim in range(logits.dim() - 1)
        },
    }


_BUILD_LOSS = "Build the smoothed target distribution and use log_softmax."


@check
def check_label_smoothed_loss(label_smoothed_loss, seed: int = 0) -> None:
    """``label_smoothed_loss(logits, target, smoothing, pad_id)``: padded targets, a fully
    padded row, smoothing 0, a pad id other than 0, huge logits, float64, and its gradient."""
    cases = [  # (B, T, V), smoothing, pad_id, dtype, scale, lengths of the rows
        ((2, 5, 7), 0.1, 0, torch.float32, 1.0, [5, 3]),
        ((3, 4, 9), 0.2, 0, torch.float64, 2.0, [4, 2, 0]),
        ((1, 1, 5), 0.0, 0, torch.float32, 1.0, [1]),
        ((2, 6, 8), 0.1, 3, torch.float32, 1.0, [6, 2]),
        ((2, 3, 6), 0.1, 0, torch.float32, 100.0, [3, 2]),
    ]
    for i, case in enumerate(cases):
        _check_loss_case(label_smoothed_loss, seed, seed * 10 + i, *case)


def _check_loss_case(
    label_smoothed_loss, seed: int, k: int, shape: tuple, s: float, pad: int, dtype, scale: float, lengths: list[int]
) -> None:
    __tracebackhide__ = True
    forbid = [
        "torch.nn.functional.cross_entropy",
        "torch.nn.CrossEntropyLoss.forward",
        "autograder.reference.label_smoothed_loss",
    ]
    logits, target = logits_and_targets(shape, pad, lengths, k, dtype, scale)
    what = (
        f"label_smoothed_loss(logits {shape} {dtype_name(dtype)} of size ~{scale:g}, target with "
        f"{int((target == pad).sum())} padding positions, smoothing={s}, pad_id={pad}) (seed {seed})"
    )
    mistakes = _loss_mistakes(logits, target, s, pad)
    expect_loss(
        what,
        label_smoothed_loss,
        reference.label_smoothed_loss,
        logits,
        (target, s, pad),
        forbid,
        _BUILD_LOSS,
        mistakes,
    )
