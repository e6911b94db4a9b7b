"""Layer normalization as a function (chapter 7).

Shape letters: B batch, L any length, D d_model. The module form,
``autograder.reference.LayerNorm`` (layers.py), holds the weights and calls this function.
"""

from __future__ import annotations

import torch
from torch import Tensor


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """LayerNorm over the last dimension (Ba et al., 2016), written out.

    y = (x - mean) / sqrt(var + eps) * weight + bias, where mean and var are taken over
    the D features of each position alone. The variance is the biased one (divide by
    D, not D - 1) and eps sits inside the square root, as in ``nn.LayerNorm``.

    Args:
        x: activations ``(..., D)``, e.g. ``(B, L, D)``.
        weight: per-feature gain ``(D,)``.
        bias: per-feature shift ``(D,)``.
        eps: added to the variance so that a constant row gives ``bias``, not NaN.

    Returns:
        a tensor of the shape and dtype of ``x``.
    """
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)  # (..., 1) each; biased: divide by D
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias
