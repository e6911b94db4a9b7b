"""Multi-head attention (chapter 4).

Shape letters: B batch, Lq query length, Lk key length, D d_model, H heads,
Dh = D // H. Masks are boolean, True = may attend, broadcastable to (B, H, Lq, Lk).

This module is the textbook path only. The key/value cache of decoding lives in
``kvcache.py`` (chapter 8), PyTorch's fused kernels in ``fused.py``.
"""

from __future__ import annotations

from torch import Tensor, nn

from autograder.reference.attention import scaled_dot_product_attention


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """``(B, L, D)`` -> ``(B, H, L, Dh)``: heads become a batch axis."""
    b, length, d = x.shape
    if d % num_heads:
        raise ValueError(f"d_model={d} is not divisible by num_heads={num_heads}")
    return x.view(b, length, num_heads, d // num_heads).transpose(1, 2)  # (B, H, L, Dh)


def merge_heads(x: Tensor) -> Tensor:
    """``(B, H, L, Dh)`` -> ``(B, L, H * Dh)``: concatenate the heads."""
    b, h, length, dh = x.shape
    return x.transpose(1, 2).reshape(b, length, h * dh)  # (B, L, D)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W_O (Vaswani et al., section 3.2.2).

    Args:
        d_model: model width D.
        num_heads: number of heads H; D must be divisible by H.
        dropout: dropout on the attention weights while training.
        bias: whether the four projections have biases.

    Shape:
        query ``(B, Lq, D)``, key and value ``(B, Lk, D)`` -> ``(B, Lq, D)``;
        ``attn_weights`` after a forward pass: ``(B, H, Lq, Lk)``.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.dropout = d_model, num_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.attn_weights: Tensor | None = None

    def forward(self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None) -> Tensor:
        q = split_heads(self.q_proj(query), self.num_heads)  # (B, H, Lq, Dh)
        k = split_heads(self.k_proj(key), self.num_heads)  # (B, H, Lk, Dh)
        v = split_heads(self.v_proj(value), self.num_heads)  # (B, H, Lk, Dh)
        return self.attend(q, k, v, attn_mask)  # (B, Lq, D)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None) -> Tensor:
        """Attention of every head, then merge and the output projection: ``(B, H, Lq, Dh)`` -> ``(B, Lq, D)``."""
        p = self.dropout if self.training else 0.0
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, attn_mask, p)  # (B, H, Lq, Dh)
        return self.out_proj(merge_heads(out))  # (B, Lq, D)
