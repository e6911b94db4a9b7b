"""PyTorch's fused kernels in place of the hand-written math (chapter 8 and the benchmarks).

``fuse(model)`` turns every ``MultiHeadAttention`` and ``LayerNorm`` of a model into the
fused subclass below, in place and keeping the weights, so the teaching modules stay
one path each and the fast path is one call away. Same function, up to rounding:
``F.scaled_dot_product_attention`` gives a fully masked row a zero output from torch 2.5
on (NaN before, which is why the package asks for torch >= 2.5), as the hand-written
attention does. ``attn_weights`` is not kept: the fused kernel never forms the weights.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder.reference.layers import LayerNorm
from autograder.reference.multihead import MultiHeadAttention, merge_heads, split_heads


class FusedMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` on ``F.scaled_dot_product_attention``, with one matrix product for
    Q, K and V in self-attention (as ``nn.MultiheadAttention`` does)."""

    def forward(self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None) -> Tensor:
        if not (query is key and key is value):
            return super().forward(query, key, value, attn_mask)
        weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])  # (3D, D)
        bias = None if self.q_proj.bias is None else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        q, k, v = (split_heads(t, self.num_heads) for t in F.linear(query, weight, bias).chunk(3, dim=-1))
        return self.attend(q, k, v, attn_mask)  # (B, Lq, D)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None) -> Tensor:
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)  # (B, H, Lq, Dh)
        self.attn_weights = None
        return self.out_proj(merge_heads(out))  # (B, Lq, D)


class FusedLayerNorm(LayerNorm):
    """``LayerNorm`` on PyTorch's kernel ``F.layer_norm``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, (x.size(-1),), self.weight, self.bias, self.eps)


def fuse(model: nn.Module) -> nn.Module:
    """Switch every ``MultiHeadAttention`` and ``LayerNorm`` inside ``model`` to its fused
    subclass, in place (parameters, buffers and state-dict names unchanged); returns ``model``."""
    for module in model.modules():
        if type(module) is MultiHeadAttention:
            module.__class__ = FusedMultiHeadAttention
        elif type(module) is LayerNorm:
            module.__class__ = FusedLayerNorm
    return model
