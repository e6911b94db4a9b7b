"""The encoder-decoder Transformer (chapter 8; Formal Algorithms, Algorithm 8).

Shape letters: B batch, S source length, T target length, D d_model, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from autograder.reference.fused import fuse
from autograder.reference.kvcache import DecoderCache
from autograder.reference.layers import Decoder, Encoder
from autograder.reference.masks import decoder_self_attention_mask, padding_mask
from autograder.reference.positional import sinusoidal_encoding


@dataclass
class TransformerConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 128  # width D of every token vector
    num_heads: int = 4  # H; d_model must be divisible by it
    num_layers: int = 2  # encoder layers = decoder layers
    d_ff: int = 512  # inner width F of the position-wise FFN
    dropout: float = 0.1  # on embeddings, attention weights and sublayer outputs
    max_len: int = 256  # longest sequence the positional table covers
    pad_id: int = 0  # token id of padding (never attended to, never scored)
    tie_embeddings: bool = False  # share the target embedding with the output projection
    norm_first: bool = False  # pre-norm instead of the paper's post-norm
    fused_kernels: bool = False  # PyTorch's fused kernels (reference.fused: F.scaled_dot_product_attention,
    # F.layer_norm) instead of the hand-written math: same result, faster


def xavier_init(module: nn.Module) -> None:
    """Xavier-uniform initialisation of every weight matrix of ``module`` (biases and gains as built)."""
    for p in module.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)


def with_positions(x: Tensor, pe: Tensor, start: int = 0) -> Tensor:
    """``x (B, L, D)`` plus rows ``start .. start + L - 1`` of the positional table ``pe (max_len, D)``."""
    end = start + x.size(1)
    if end > pe.size(0):
        raise ValueError(f"sequence of length {end} is longer than max_len={pe.size(0)}")
    return x + pe[start:end].to(x.dtype)


class Embeddings(nn.Module):
    """Token lookup scaled by sqrt(D) (Vaswani et al., section 3.4); positions are added later.

    Shape: ``(B, L)`` integer ids -> ``(B, L, D)``.
    """

    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.embedding(tokens) * math.sqrt(self.d_model)


class EncoderDecoder(nn.Module):
    """The Transformer of Vaswani et al.: embeddings + positions, encoder, decoder, unembedding.

    Example:
        >>> cfg = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, dropout=0.0)
        >>> model = EncoderDecoder(cfg)
        >>> model(torch.randint(1, 20, (2, 7)), torch.randint(1, 20, (2, 5))).shape
        torch.Size([2, 5, 20])
    """

    pe: Tensor  # (max_len, D), a buffer

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = self.config = config
        self.src_embed = Embeddings(c.src_vocab_size, c.d_model)
        self.tgt_embed = Embeddings(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.encoder, self.decoder = self.build_stacks(c)
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size)
        xavier_init(self)
        if c.tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight

    def build_stacks(self, config: TransformerConfig) -> tuple[nn.Module, nn.Module]:
        """The encoder and decoder stacks of chapter 7 (``baseline.TorchTransformer`` builds PyTorch's)."""

        def stack(kind: type[Encoder] | type[Decoder]) -> nn.Module:
            built = kind(
                num_layers=config.num_layers,
                d_model=config.d_model,
                num_heads=config.num_heads,
                d_ff=config.d_ff,
                dropout=config.dropout,
                norm_first=config.norm_first,
            )
            return fuse(built) if config.fused_kernels else built

        return stack(Encoder), stack(Decoder)

    def new_cache(self) -> DecoderCache:
        """An empty key/value cache for incremental decoding (``greedy_decode(..., use_cache=True)``)."""
        return DecoderCache.empty(self.config.num_layers)

    def _positions(self, x: Tensor, start: int = 0) -> Tensor:
        return self.dropout(with_positions(x, self.pe, start))

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, S)`` ids -> ``(memory (B, S, D), src_mask (B, 1, 1, S))``."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        return self.encoder(self._positions(self.src_embed(src)), src_mask), src_mask

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """``(B, T)`` ids -> logits ``(B, T, V)``.

        With a ``cache`` (greedy decoding), ``tgt_in`` holds only the new tokens; the
        keys and values of earlier ones come from the cache.
        """
        start = 0
        tokens = tgt_in
        if cache is not None:
            if cache.tokens is not None:
                start = cache.tokens.size(1)
                tokens = torch.cat([cache.tokens, tgt_in], dim=1)  # (B, t + T)
            cache.tokens = tokens
        tgt_mask = decoder_self_attention_mask(tokens, self.config.pad_id)[:, :, start:, :]
        y = self._positions(self.tgt_embed(tgt_in), start)  # (B, T, D)
        y = self.decoder(y, memory, tgt_mask, src_mask, None if cache is None else cache.layers)
        return self.generator(y)  # (B, T, V)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: ``src (B, S)``, ``tgt_in (B, T)`` (BOS ...) -> logits ``(B, T, V)``."""
        memory, src_mask = self.encode(src)
        return self.decode(tgt_in, memory, src_mask)
