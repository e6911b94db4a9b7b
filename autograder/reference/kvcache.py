"""The key/value cache of incremental decoding (chapter 8).

Shape letters: B batch, H heads, t tokens decoded so far, Lk key length, Dh head width.

At decoding step t the decoder sees one new token, but its self-attention needs the keys
and values of all t tokens before it. Recomputing them every step makes producing N
tokens cost about N^2 / 2 token-passes through the projections and the feed-forward;
keeping them makes it N. Attention itself still looks at every earlier token at every
step, so its total cost stays quadratic. Cross-attention's keys and values come from the
encoder memory, which does not change: they are computed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from autograder.reference.multihead import MultiHeadAttention, split_heads


@dataclass
class KVCache:
    """Keys and values of one attention layer, kept between decoding steps.

    ``static=True`` (cross-attention): computed from the encoder memory at the first
    step and reused. ``static=False`` (self-attention): each step appends its own.
    """

    static: bool
    k: Tensor | None = None  # (B, H, Lk, Dh)
    v: Tensor | None = None  # (B, H, Lk, Dh)

    def attend(
        self,
        attn: MultiHeadAttention,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: Tensor | None = None,
    ) -> Tensor:
        """``attn(query, key, value, attn_mask)``, projecting only the keys and values not yet cached."""
        q = split_heads(attn.q_proj(query), attn.num_heads)  # (B, H, Lq, Dh)
        if not (self.static and self.k is not None):
            k = split_heads(attn.k_proj(key), attn.num_heads)  # (B, H, Lk_new, Dh)
            v = split_heads(attn.v_proj(value), attn.num_heads)  # (B, H, Lk_new, Dh)
            if self.k is not None and self.v is not None:
                k = torch.cat([self.k, k], dim=2)  # (B, H, Lk_past + Lk_new, Dh)
                v = torch.cat([self.v, v], dim=2)
            self.k, self.v = k, v
        assert self.k is not None and self.v is not None
        return attn.attend(q, self.k, self.v, attn_mask)  # (B, Lq, D)


@dataclass
class LayerCache:
    """What one decoder layer keeps: its self-attention's and its cross-attention's keys and values."""

    self_attn: KVCache = field(default_factory=lambda: KVCache(static=False))
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))


@dataclass
class DecoderCache:
    """What incremental decoding keeps between steps: every layer's keys and values, and the
    tokens fed so far (for the target padding mask and the positions)."""

    layers: list[LayerCache]
    tokens: Tensor | None = None  # (B, t)

    @classmethod
    def empty(cls, num_layers: int) -> DecoderCache:
        return cls([LayerCache() for _ in range(num_layers)])
