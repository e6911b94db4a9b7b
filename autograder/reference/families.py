"""The three families: decoder-only, encoder-only, encoder-decoder (chapter 9).

Formal Algorithms for Transformers (Phuong and Hutter, 2022) writes them as algorithms
8 (EDTransformer: ``model.EncoderDecoder``), 9 (ETransformer, BERT-like: ``EncoderOnly``)
and 10 (DTransformer, GPT-like: ``DecoderOnly``). The two one-stack families are the same
network: embeddings, positions, a stack of the course's encoder layers (self-attention and
FFN, no cross-attention), and an unembedding. Only the mask differs: causal (each position
sees itself and the past, so position t can be trained to predict token t + 1) or
bidirectional (every position sees every real token, so it is trained to fill in
masked tokens).

Shape letters: B batch, L length, D d_model, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder.data.vocab import BOS_ID, EOS_ID, PAD_ID
from autograder.reference.generate import sample_next
from autograder.reference.layers import Encoder
from autograder.reference.masks import decoder_self_attention_mask, padding_mask
from autograder.reference.model import Embeddings, with_positions, xavier_init
from autograder.reference.positional import sinusoidal_encoding


@dataclass
class LanguageModelConfig:
    vocab_size: int
    d_model: int = 128  # width D of every token vector
    num_heads: int = 4  # H; d_model must be divisible by it
    num_layers: int = 2  # encoder layers in the stack
    d_ff: int = 512  # inner width F of the position-wise FFN
    dropout: float = 0.1  # on embeddings, attention weights and sublayer outputs
    max_len: int = 256  # longest sequence the positional table covers (the context)
    pad_id: int = 0  # token id of padding (never attended to, never scored)
    norm_first: bool = False  # pre-norm (GPT-2's choice) instead of the paper's post-norm
    tie_embeddings: bool = True  # the unembedding reuses the token embedding (GPT-2 and BERT do)


class _OneStack(nn.Module):
    """Embeddings + positions, ``Encoder`` run with the mask of the family, unembedding."""

    causal: bool = True
    pe: Tensor  # (max_len, D), a buffer

    def __init__(self, config: LanguageModelConfig) -> None:
        super().__init__()
        c = self.config = config
        self.embed = Embeddings(c.vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = Encoder(
            num_layers=c.num_layers,
            d_model=c.d_model,
            num_heads=c.num_heads,
            d_ff=c.d_ff,
            dropout=c.dropout,
            norm_first=c.norm_first,
        )  # final LayerNorm only for pre-norm
        self.unembed = nn.Linear(c.d_model, c.vocab_size, bias=False)  # W_u of Formal Algorithms
        xavier_init(self)
        if c.tie_embeddings:
            self.unembed.weight = self.embed.embedding.weight

    def mask(self, tokens: Tensor) -> Tensor:
        """Causal AND padding ``(B, 1, L, L)``, or padding only ``(B, 1, 1, L)``; True = may attend."""
        if self.causal:
            return decoder_self_attention_mask(tokens, self.config.pad_id)  # (B, 1, L, L)
        return padding_mask(tokens, self.config.pad_id)  # (B, 1, 1, L)

    def forward(self, tokens: Tensor) -> Tensor:
        """``(B, L)`` ids -> logits ``(B, L, V)``."""
        x = self.dropout(with_positions(self.embed(tokens), self.pe))  # (B, L, D)
        return self.unembed(self.blocks(x, self.mask(tokens)))  # (B, L, V)


class DecoderOnly(_OneStack):
    """A GPT-like language model (Formal Algorithms, Algorithm 10): position t sees tokens 0..t.

    Args:
        config: a ``LanguageModelConfig``.

    Shape:
        tokens ``(B, L)`` -> logits ``(B, L, V)``; ``logits[:, t]`` scores token t + 1.

    Example:
        >>> model = DecoderOnly(LanguageModelConfig(vocab_size=20, dropout=0.0))
        >>> model(torch.randint(1, 20, (2, 7))).shape
        torch.Size([2, 7, 20])
    """

    causal = True


class EncoderOnly(_OneStack):
    """A BERT-like masked language model (Formal Algorithms, Algorithm 9): every position sees
    every real token, before and after it; padding is never attended to.

    Shape: tokens ``(B, L)`` -> logits ``(B, L, V)``; ``logits[:, t]`` scores token t itself.
    """

    causal = False


def _mean_nll(logits: Tensor, targets: Tensor, ignore_id: int) -> Tensor:
    """Mean of -log softmax(logits)[target] over the positions whose target is not ``ignore_id``."""
    logp = F.log_softmax(logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits, dim=-1)
    nll = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, L)
    keep = targets != ignore_id
    return (nll * keep).sum() / keep.sum().clamp(min=1)  # 0, not NaN, when nothing is scored


def next_token_loss(logits: Tensor, tokens: Tensor, pad_id: int) -> Tensor:
    """The language-modelling loss: position t predicts token t + 1.

    Cross-entropy of ``logits[:, :-1]`` against ``tokens[:, 1:]``, averaged over the targets
    that are not padding (the last position has nothing to predict). Equals
    ``F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1), ignore_index=pad_id)``
    except that a batch with no real target gives 0 instead of NaN.

    Shape: logits ``(B, L, V)`` (from ``model(tokens)``), tokens ``(B, L)`` -> scalar.
    """
    logits, targets = logits[:, :-1], tokens[:, 1:]  # (B, L - 1, V), (B, L - 1): the shift
    logp = F.log_softmax(logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits, dim=-1)
    nll = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, L - 1)
    keep = targets != pad_id
    return (nll * keep).sum() / keep.sum().clamp(min=1)


def mask_tokens(
    tokens: Tensor,
    mask_id: int,
    vocab_size: int,
    p: float = 0.15,
    generator: torch.Generator | None = None,
    special_ids: tuple[int, ...] = (PAD_ID, BOS_ID, EOS_ID),
) -> tuple[Tensor, Tensor]:
    """BERT's corruption (Devlin et al., 2019, section 3.1): choose each ordinary token with
    probability ``p``; of the chosen, 80% become ``mask_id``, 10% a random ordinary token,
    10% stay as they are.

    Tokens in ``special_ids`` (padding included) are never chosen. The random replacements
    are drawn uniformly from the ids below ``vocab_size`` that are neither special nor
    ``mask_id``. Every chosen position is scored, the unchanged and the randomised ones too
    (otherwise the model could learn that an unmasked token is always right); no other
    position is.

    Returns:
        ``(inputs, targets)``, both ``(B, L)``: the corrupted tokens, and the original token
        at every chosen position with ``special_ids[0]`` (padding, ignored by
        ``masked_token_loss``) everywhere else.
    """
    ordinary = torch.ones(vocab_size, dtype=torch.bool)
    ordinary[list(special_ids) + [mask_id]] = False
    pool = ordinary.nonzero().squeeze(-1).to(tokens.device)  # (N,) ids a random replacement may take
    draw = torch.rand(tokens.shape, generator=generator).to(tokens.device)  # (B, L) which positions
    how = torch.rand(tokens.shape, generator=generator).to(tokens.device)  # (B, L) 80/10/10
    picks = torch.randint(len(pool), tokens.shape, generator=generator).to(tokens.device)  # (B, L)
    special = torch.isin(tokens, torch.tensor(special_ids, device=tokens.device))
    chosen = (draw < p) & ~special
    inputs = torch.where(chosen & (how < 0.8), mask_id, tokens)
    inputs = torch.where(chosen & (how >= 0.8) & (how < 0.9), pool[picks], inputs)
    targets = torch.where(chosen, tokens, special_ids[0])
    return inputs, targets


def masked_token_loss(logits: Tensor, targets: Tensor, ignore_id: int = PAD_ID) -> Tensor:
    """Cross-entropy at the chosen positions of ``mask_tokens``, averaged over them.

    Shape: logits ``(B, L, V)`` (from ``model(inputs)``), targets ``(B, L)`` -> scalar.
    """
    return _mean_nll(logits, targets, ignore_id)


@torch.no_grad()
def continue_prompt(
    model: DecoderOnly,
    prompt: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    *,
    top_p: float | None = None,
) -> Tensor:
    """Continue every prompt by ``max_new_tokens`` tokens, each drawn by ``sample_next``.

    Prompts hold no padding (all rows the same length). Only the last ``max_len`` tokens are
    fed back when the sequence outgrows the positional table. ``temperature=0`` is greedy.

    Shape: prompt ``(B, P)`` -> ``(B, P + max_new_tokens)``.
    """
    was_training = model.training
    model.eval()
    try:
        tokens = prompt
        for _ in range(max_new_tokens):
            context = tokens[:, -model.config.max_len :]  # (B, <= max_len)
            logits = model(context)[:, -1]  # (B, V)
            nxt = sample_next(logits, temperature, top_k, top_p, generator)  # (B,)
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)  # (B, t + 1)
        return tokens
    finally:
        model.train(was_training)
