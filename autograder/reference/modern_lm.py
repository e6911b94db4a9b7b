"""Today's decoder-only block and model, perplexity, and batched generation with left padding (chapter 10).

Shape letters: B batch, L length (new tokens), P tokens already in the cache, D d_model,
H query heads, G key/value heads, Dh head width, V vocabulary.

The block differs from chapter 9's ``DecoderOnly`` in five places, each measured on the page:
pre-norm with RMSNorm instead of post-norm LayerNorm, RoPE on queries and keys instead of
sinusoids added to the embeddings, SwiGLU instead of ReLU, grouped-query attention, and no
biases in any projection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from autograder.reference.families import next_token_loss
from autograder.reference.model import xavier_init
from autograder.reference.modern import RMSNorm, SwiGLU, grouped_query_attention
from autograder.reference.multihead import merge_heads, split_heads
from autograder.reference.rope import apply_rope


@dataclass
class ModernConfig:
    vocab_size: int
    d_model: int = 128  # width D of every token vector
    num_heads: int = 4  # H query heads; d_model must be divisible by it
    num_kv_heads: int = 2  # G key/value heads; H must be a multiple of G (G = H: multi-head)
    num_layers: int = 2  # blocks in the stack
    d_ff: int | None = None  # SwiGLU's hidden width; None: about 8D/3, the parameters of a 4D ReLU FFN
    rope_base: float = 10000.0  # RoPE's frequency base
    eps: float = 1e-6  # RMSNorm's epsilon
    pad_id: int = 0  # never attended to, never scored
    tie_embeddings: bool = True  # the unembedding reuses the token embedding


@dataclass
class ModernCache:
    """Every layer's keys (rotated) and values ``(B, G, P, Dh)``, kept between decoding steps."""

    keys: list[Tensor | None] = field(default_factory=list)
    values: list[Tensor | None] = field(default_factory=list)

    @classmethod
    def empty(cls, num_layers: int) -> ModernCache:
        return cls([None] * num_layers, [None] * num_layers)

    def length(self) -> int:
        first = self.keys[0] if self.keys else None
        return 0 if first is None else first.size(2)


class GroupedQueryAttention(nn.Module):
    """Self-attention with RoPE, G key/value heads shared by H query heads, bias-free projections."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0) -> None:
        super().__init__()
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"need H | D and G | H, got D={d_model}, H={num_heads}, G={num_kv_heads}")
        self.num_heads, self.num_kv_heads, self.rope_base = num_heads, num_kv_heads, rope_base
        head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * head_dim, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(
        self, x: Tensor, positions: Tensor, attn_mask: Tensor, cache: ModernCache | None = None, layer: int = 0
    ) -> Tensor:
        """x ``(B, L, D)``, positions ``(L,)`` or ``(B, L)``, attn_mask ``(B, 1, L, P + L)`` -> ``(B, L, D)``."""
        q = apply_rope(split_heads(self.q_proj(x), self.num_heads), positions, self.rope_base)  # (B, H, L, Dh)
        k = apply_rope(split_heads(self.k_proj(x), self.num_kv_heads), positions, self.rope_base)  # (B, G, L, Dh)
        v = split_heads(self.v_proj(x), self.num_kv_heads)  # (B, G, L, Dh): values are not rotated
        if cache is not None:
            past_k, past_v = cache.keys[layer], cache.values[layer]
            if past_k is not None and past_v is not None:
                k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)  # (B, G, P + L, Dh)
            cache.keys[layer], cache.values[layer] = k, v
        return self.out_proj(merge_heads(grouped_query_attention(q, k, v, attn_mask)))  # (B, L, D)


class ModernBlock(nn.Module):
    """Pre-norm: ``x + attn(norm(x))``, then ``x + ffn(norm(x))``, with RMSNorm and SwiGLU."""

    def __init__(self, c: ModernConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(c.d_model, c.eps)
        self.attn = GroupedQueryAttention(c.d_model, c.num_heads, c.num_kv_heads, c.rope_base)
        self.ffn_norm = RMSNorm(c.d_model, c.eps)
        self.ffn = SwiGLU(c.d_model, c.d_ff)

    def forward(
        self, x: Tensor, positions: Tensor, attn_mask: Tensor, cache: ModernCache | None = None, layer: int = 0
    ) -> Tensor:
        x = x + self.attn(self.attn_norm(x), positions, attn_mask, cache, layer)
        return x + self.ffn(self.ffn_norm(x))


class ModernLM(nn.Module):
    """A decoder-only language model with today's block (chapter 10).

    Shape: tokens ``(B, L)`` -> logits ``(B, L, V)``; ``logits[:, t]`` scores token t + 1.

    ``forward(tokens, positions, keep, cache)``: ``keep (B, P + L)`` says which keys are real
    (False for padding; default: ``tokens != pad_id``); ``positions`` default to
    P .. P + L - 1; with a ``cache`` the new keys and values are appended to it.
    """

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        c = self.config = config
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.blocks = nn.ModuleList(ModernBlock(c) for _ in range(c.num_layers))
        self.norm = RMSNorm(c.d_model, c.eps)
        self.unembed = nn.Linear(c.d_model, c.vocab_size, bias=False)
        xavier_init(self)
        if c.tie_embeddings:
            self.unembed.weight = self.embed.weight

    def forward(
        self,
        tokens: Tensor,
        positions: Tensor | None = None,
        keep: Tensor | None = None,
        cache: ModernCache | None = None,
    ) -> Tensor:
        past, length = (cache.length() if cache is not None else 0), tokens.size(1)
        if positions is None:
            positions = torch.arange(past, past + length, device=tokens.device)  # (L,)
        if keep is None:
            keep = tokens != self.config.pad_id  # (B, L); the cached keys, if any, count as real
            keep = torch.cat([keep.new_ones(tokens.size(0), past), keep], dim=1)  # (B, P + L)
        causal = torch.ones(length, past + length, dtype=torch.bool, device=tokens.device).tril(diagonal=past)
        mask = causal & keep[:, None, None, :]  # (B, 1, L, P + L)
        x = self.embed(tokens)  # (B, L, D): no sqrt(D) scaling and no added positions
        for i, block in enumerate(self.blocks):
            x = block(x, positions, mask, cache, i)
        return self.unembed(self.norm(x))  # (B, L, V)


def perplexity(logits: Tensor, tokens: Tensor, pad_id: int) -> Tensor:
    """``exp`` of the mean next-token loss: the size of a uniform choice that would be as unsure.

    The mean is over every non-pad target of the batch (chapter 9's ``next_token_loss``), so
    it is a geometric mean of 1 / p(target) per token, never a mean of per-row perplexities.
    Shape: logits ``(B, L, V)``, tokens ``(B, L)`` -> scalar."""
    return next_token_loss(logits, tokens, pad_id).exp()


def left_pad(prompts: list[list[int]], pad_id: int, device: torch.device | str = "cpu") -> tuple[Tensor, Tensor]:
    """Prompts of different lengths, right-aligned: ``(tokens (B, P), keep (B, P))``, keep False on padding.

    Left padding puts every prompt's last token in the last column, where the next token is read."""
    width = max(len(p) for p in prompts)
    tokens = torch.tensor([[pad_id] * (width - len(p)) + list(p) for p in prompts], device=device)  # (B, P)
    keep = torch.tensor([[False] * (width - len(p)) + [True] * len(p) for p in prompts], device=device)  # (B, P)
    return tokens, keep


@torch.no_grad()
def generate_greedy(model: ModernLM, prompts: list[list[int]], max_new_tokens: int) -> Tensor:
    """Greedy continuation of a batch of prompts of different lengths, with a KV cache.

    Left padding, per-row positions (a row's first real token is at position 0) and padding
    masked as keys give each row what it would get alone. Returns the new tokens ``(B, N)``."""
    model.eval()
    tokens, keep = left_pad(prompts, model.config.pad_id, next(model.parameters()).device)  # (B, P) each
    positions = (keep.long().cumsum(-1) - 1).clamp(min=0)  # (B, P): padding at 0, never attended to
    cache = ModernCache.empty(len(model.blocks))
    logits = model(tokens, positions, keep, cache)[:, -1]  # (B, V)
    out = []
    for step in range(max_new_tokens):
        nxt = logits.argmax(-1)  # (B,)
        out.append(nxt)
        if step + 1 == max_new_tokens:
            break
        positions = positions[:, -1:] + 1  # (B, 1)
        keep = torch.cat([keep, keep.new_ones(keep.size(0), 1)], dim=1)  # (B, P + t + 1)
        logits = model(nxt[:, None], positions, keep, cache)[:, -1]  # (B, V)
    return torch.stack(out, dim=1)  # (B, N)
