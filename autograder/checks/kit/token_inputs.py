"""The inputs that the checks of labs 08 and 09 share: random token ids, padded batches of them,
and the decoder's self-attention mask (or a wrong one, without its causal or padding part).
"""

from __future__ import annotations

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import generator
from autograder.data import PAD_ID


def random_ids(shape: tuple[int, ...], low: int, high: int, seed: int) -> Tensor:
    """Ids drawn uniformly from ``low``..``high - 1`` with the generator of ``seed``."""
    return torch.randint(low, high, shape, generator=generator(seed))


def padded_ids(batch: int, length: int, vocab: int, seed: int, lengths: list[int] | None = None) -> Tensor:
    """Ids in 3..V-1, row b padded after ``lengths[b]`` real tokens (default: shrinking rows)."""
    x = random_ids((batch, length), 3, vocab, seed)
    lengths = lengths or [max(1, length - 2 * b) for b in range(batch)]
    for b, n in enumerate(lengths):
        x[b, n:] = PAD_ID
    return x


def self_attention_mask(ids: Tensor, pad_id: int, *, causal: bool = True, pad: bool = True) -> Tensor:
    """The decoder's self-attention mask, or a wrong one without its causal or its padding part."""
    if causal and pad:
        return reference.decoder_self_attention_mask(ids, pad_id)  # (B, 1, L, L)
    if causal:
        return reference.causal_mask(ids.size(1))  # (L, L)
    return reference.padding_mask(ids, pad_id)  # (B, 1, 1, L)
