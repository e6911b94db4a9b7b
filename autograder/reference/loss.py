"""Label-smoothed cross-entropy and the warmup learning-rate schedule (chapter 8).

Shape letters: B batch, T target length, V vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def label_smoothed_loss(logits: Tensor, target: Tensor, smoothing: float, pad_id: int) -> Tensor:
    """Cross-entropy against a smoothed target distribution, averaged over non-pad positions.

    The target puts ``1 - smoothing`` on the true token, ``smoothing / (V - 2)`` on every
    other token except padding, and 0 on padding. Positions whose target is padding
    are left out of the sum and of the count.

    Shape: logits ``(B, T, V)``, target ``(B, T)`` -> scalar.
    """
    vocab = logits.size(-1)
    if vocab < 3:
        raise ValueError(f"label smoothing needs a vocabulary of at least 3 tokens, got {vocab}")
    if logits.dtype in (torch.float16, torch.bfloat16):  # autocast: take the log-softmax in float32
        logits = logits.float()
    logp = F.log_softmax(logits, dim=-1)  # (B, T, V)
    off = smoothing / (vocab - 2)
    true_logp = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T)
    others = logp.sum(-1) - true_logp - logp[..., pad_id]  # (B, T): every token but true and pad
    per_token = -((1.0 - smoothing) * true_logp + off * others)  # (B, T)
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def noam_lr(step: int, d_model: int, warmup: int) -> float:
    """lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps counted from 1.

    Rises linearly for ``warmup`` steps, peaks at ``step == warmup``, then decays as
    1/sqrt(step) (Vaswani et al., section 5.3).
    """
    if step < 1:
        raise ValueError(f"steps are counted from 1, got step={step}")
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup: int, factor: float = 1.0):
    """A ``LambdaLR`` whose multiplier at the n-th optimizer step is ``factor * noam_lr(n)``;
    give the optimizer ``lr=1``."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: factor * noam_lr(i + 1, d_model, warmup))
