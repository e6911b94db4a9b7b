"""The leak test: does a layer let earlier positions see later ones? (chapter 6)

Shape letters: B batch, L length, D d_model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def leaks_future(
    layer: Callable[[Tensor], Tensor],
    d_model: int,
    length: int = 8,
    batch: int = 2,
    seed: int = 0,
    atol: float = 1e-6,
) -> bool:
    """True when some output position depends on a later input position.

    Args:
        layer: any callable mapping a float32 tensor ``x`` of shape ``(B, L, D)`` to a
            tensor ``(B, L, D')`` whose position t is the output for position t (an
            ``nn.Module`` in eval mode, a function, a lambda). It must be deterministic.
        d_model: the width D the layer expects.
        length: the sequence length L used for the test (at least 2 to test anything).
        batch: the batch size B.
        seed: seeds the random inputs, so the answer is reproducible.
        atol: the largest absolute change of an earlier output that still counts as
            "unchanged" (float32 round-off is far below the default 1e-6).

    Returns:
        For every split point t in 0..L-2: the inputs at positions t+1..L-1 are replaced
        by fresh random values (the inputs up to t are kept); if any output at positions
        0..t then changes by more than ``atol``, the layer leaks and the result is True.
        False when no split point shows a change.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, d_model, generator=g)  # (B, L, D)
    with torch.no_grad():
        y = layer(x)  # (B, L, D')
        for t in range(length - 1):
            changed = x.clone()
            changed[:, t + 1 :] = torch.randn(batch, length - t - 1, d_model, generator=g)
            y_changed = layer(changed)
            if bool(((y_changed[:, : t + 1] - y[:, : t + 1]).abs() > atol).any()):
                return True
    return False
