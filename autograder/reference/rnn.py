"""A tanh RNN written step by step, and what it says about path length (chapter 1).

Shape letters: B batch, L length, I input size, H hidden size.
Raw weights multiply on the right: ``x_t @ W_xh`` with ``W_xh`` of shape ``(I, H)``.
"""

from __future__ import annotations

import torch
from torch import Tensor


def rnn_forward(x: Tensor, h0: Tensor, W_xh: Tensor, W_hh: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """h_t = tanh(x_t W_xh + h_{t-1} W_hh + b), one step after another.

    Shape: x ``(B, L, I)``, h0 ``(B, H)``, W_xh ``(I, H)``, W_hh ``(H, H)``, b ``(H,)``
    -> ``(outputs (B, L, H), h_last (B, H))``.
    """
    h, outputs = h0, []
    for t in range(x.size(1)):  # step t needs h_{t-1}: no parallelism across time
        h = torch.tanh(x[:, t] @ W_xh + h @ W_hh + b)  # (B, H)
        outputs.append(h)
    return torch.stack(outputs, dim=1), h  # (B, L, H), (B, H)


def hidden_gradient_norms(x: Tensor, h0: Tensor, W_xh: Tensor, W_hh: Tensor, b: Tensor) -> Tensor:
    """Frobenius norms of the Jacobians d h_L / d h_t for t = 1..L (batch element 0).

    ``result[t-1]`` is the norm for h_t; the last entry (t = L) is sqrt(H), the identity.
    Shape: as ``rnn_forward`` -> ``(L,)``.
    """
    outputs, _ = rnn_forward(x[:1], h0[:1], W_xh, W_hh, b)
    hs = outputs[0]  # (L, H)
    length, hidden = hs.shape
    jac = torch.eye(hidden, dtype=hs.dtype, device=hs.device)  # d h_L / d h_L
    norms = [jac.norm()]
    for t in range(length - 1, 0, -1):
        # h_{t+1} = tanh(a) with a = x W_xh + h_t W_hh + b: d h_{t+1} / d h_t = diag(1 - h_{t+1}^2) W_hh^T
        step = (1 - hs[t] ** 2)[:, None] * W_hh.T  # (H, H)
        jac = jac @ step
        norms.append(jac.norm())
    return torch.stack(norms[::-1])  # (L,)


def receptive_field(kernel_size: int, num_layers: int) -> int:
    """Positions one output of a stack of stride-1 1-D convolutions sees: 1 + n (k - 1)."""
    if kernel_size < 1 or num_layers < 0:
        raise ValueError(f"need kernel_size >= 1 and num_layers >= 0, got {kernel_size}, {num_layers}")
    return 1 + num_layers * (kernel_size - 1)
