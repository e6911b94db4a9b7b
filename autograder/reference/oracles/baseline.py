"""The same encoder-decoder built on PyTorch's ``nn.Transformer``: the oracle of the benchmarks.

Shape letters: B batch, S source length, T target length, D d_model, V vocabulary.

Everything around the stacks is ``EncoderDecoder``'s own (``Embeddings`` scaled by sqrt(D),
the same sinusoidal table, dropout, the ``generator``, Xavier initialisation): the subclass
replaces only the stacks, so the two models differ only in how the layers are written. Two
differences of PyTorch's module are undone here:

* its boolean masks mean True = BLOCKED, the opposite of ours (True = may attend);
  every mask is converted explicitly with ``to_pytorch_mask``;
* ``nn.Transformer`` always puts a LayerNorm after both stacks, right for pre-norm but
  an extra one for the paper's post-norm; we pass our own stacks with ``norm=None``
  unless ``norm_first=True``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from autograder.reference.kvcache import DecoderCache
from autograder.reference.masks import causal_mask, padding_mask, to_pytorch_mask
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.oracles.interop import layer_state_to_torch


class TorchTransformer(EncoderDecoder):
    """``EncoderDecoder`` with PyTorch's ``nn.TransformerEncoder`` and ``nn.TransformerDecoder`` as stacks.

    Construction is ``EncoderDecoder``'s; only ``build_stacks``, ``encode`` and ``decode``
    differ. ``train``, ``evaluate`` and ``greedy_decode`` (without cache) run on it unchanged.

    Example:
        >>> cfg = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, dropout=0.0)
        >>> TorchTransformer(cfg)(torch.randint(1, 20, (2, 7)), torch.randint(1, 20, (2, 5))).shape
        torch.Size([2, 5, 20])
    """

    encoder: nn.TransformerEncoder
    decoder: nn.TransformerDecoder

    def build_stacks(self, config: TransformerConfig) -> tuple[nn.Module, nn.Module]:
        c = config
        layer_args: dict[str, Any] = dict(
            d_model=c.d_model,
            nhead=c.num_heads,
            dim_feedforward=c.d_ff,
            dropout=c.dropout,
            activation="relu",
            batch_first=True,
            norm_first=c.norm_first,
        )
        encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**layer_args),
            c.num_layers,
            norm=nn.LayerNorm(c.d_model) if c.norm_first else None,
            enable_nested_tensor=False,  # keep padded positions as they are, as ours does
        )
        decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**layer_args),
            c.num_layers,
            norm=nn.LayerNorm(c.d_model) if c.norm_first else None,
        )
        return encoder, decoder

    def new_cache(self) -> DecoderCache:
        raise NotImplementedError("TorchTransformer has no key/value cache: decode with use_cache=False")

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, S)`` ids -> ``(memory (B, S, D), src_mask (B, 1, 1, S))``, our mask convention."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S), True = may attend
        blocked = to_pytorch_mask(src_mask[:, 0, 0, :])  # (B, S), True = padding (PyTorch's convention)
        memory = self.encoder(self._positions(self.src_embed(src)), src_key_padding_mask=blocked)
        return memory, src_mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None = None) -> Tensor:
        """``(B, T)`` ids -> logits ``(B, T, V)``; the whole prefix every call (no cache)."""
        if cache is not None:
            raise NotImplementedError("TorchTransformer has no key/value cache: decode with use_cache=False")
        pad = self.config.pad_id
        # PyTorch's convention, True = blocked: future positions, target padding, source padding.
        tgt_mask = to_pytorch_mask(causal_mask(tgt_in.size(1), tgt_in.device))  # (T, T)
        tgt_blocked = to_pytorch_mask(padding_mask(tgt_in, pad)[:, 0, 0, :])  # (B, T)
        memory_blocked = to_pytorch_mask(src_mask[:, 0, 0, :])  # (B, S)
        y = self.decoder(
            self._positions(self.tgt_embed(tgt_in)),
            memory,
            tgt_mask=tgt_mask,
            tgt_key_padding_mask=tgt_blocked,
            memory_key_padding_mask=memory_blocked,
        )  # (B, T, D)
        return self.generator(y)  # (B, T, V)

    @torch.no_grad()
    def load_reference_weights(self, reference: EncoderDecoder) -> TorchTransformer:
        """Copy the weights of an ``EncoderDecoder`` of the same config; returns ``self``.

        PyTorch stores the query, key and value projections stacked as one
        ``in_proj_weight`` ``(3D, D)`` (rows q, then k, then v) and calls cross-attention
        ``multihead_attn``; everything else maps one to one. With equal weights the two
        models compute the same function, so benchmarks can start both from one point.
        """
        sd = reference.state_dict()
        out = {k: v for k, v in sd.items() if k.split(".")[0] in ("src_embed", "tgt_embed", "generator")}
        for stack, decoder in (("encoder", False), ("decoder", True)):
            for i in range(self.config.num_layers):
                layer = layer_state_to_torch(sd, f"{stack}.layers.{i}.", decoder)
                out.update({f"{stack}.layers.{i}.{k}": v for k, v in layer.items()})
            if self.config.norm_first:
                for kind in ("weight", "bias"):
                    out[f"{stack}.norm.{kind}"] = sd[f"{stack}.norm.{kind}"]
        self.load_state_dict(out, strict=True)
        return self
