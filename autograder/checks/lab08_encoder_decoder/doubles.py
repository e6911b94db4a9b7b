"""Test doubles the checks hand to a candidate: an optimizer, a schedule, a scripted model.

A candidate calls them by their public names only (``zero_grad``, ``step``,
``get_last_lr``, ``param_groups``, ``encode``, ``decode``, ``eval``...), as it would call
PyTorch's, and across the independent check's boundary it reaches them by those names too
(``autograder.grading.protocol.remote`` serves public attributes only): keep these interfaces.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder import reference
from autograder.reference.kvcache import DecoderCache


class SGD:
    """Plain SGD with torch.optim's interface. The first torch.optim optimizer of a process
    imports torch._dynamo (about 2 s), which would make the lab too slow to grade."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float) -> None:
        self.param_groups: list[dict[str, Any]] = [{"params": list(params), "lr": lr}]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self, closure: object = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])


class NoamSchedule:
    """The warmup schedule with LambdaLR's interface: the n-th optimizer step uses
    factor * noam_lr(n)."""

    def __init__(self, optimizer: SGD, d_model: int, warmup: int, factor: float) -> None:
        self.optimizer, self.d_model, self.warmup, self.factor, self.last_epoch = optimizer, d_model, warmup, factor, 0
        self._apply()

    def _apply(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.factor * reference.noam_lr(self.last_epoch + 1, self.d_model, self.warmup)

    def step(self) -> None:
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


def sgd_with_noam(model: reference.EncoderDecoder, lr_factor: float = 2.0) -> tuple[SGD, NoamSchedule]:
    """What ``check_train_step`` hands the candidate: SGD(lr=1.0) and the Noam schedule
    (warmup 3, ``lr_factor``)."""
    optimizer = SGD(model.parameters(), lr=1.0)
    return optimizer, NoamSchedule(optimizer, model.config.d_model, warmup=3, factor=lr_factor)


class ScriptedModel(reference.EncoderDecoder):
    """A reference model whose logits at target position t get +50 on ``script[b, t]``, so
    that greedy decoding follows the script and the check chooses where each row meets EOS.
    It decodes the whole prefix every step (no key/value cache)."""

    def __init__(self, config: reference.TransformerConfig, script: Tensor | None) -> None:
        super().__init__(config)
        self.script = script  # (B, N) or None (an ordinary random model)

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None = None) -> Tensor:
        if cache is not None:
            raise ValueError("this model decodes the whole prefix: call decode without a cache")
        logits = super().decode(tgt_in, memory, src_mask)  # (B, T, V)
        if self.script is None:
            return logits
        positions = torch.arange(tgt_in.size(1)).clamp(max=self.script.size(1) - 1)  # (T,)
        bonus = F.one_hot(self.script[:, positions], logits.size(-1)).to(logits.dtype)  # (B, T, V)
        return logits + 50.0 * bonus
