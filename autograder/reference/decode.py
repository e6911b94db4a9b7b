"""Batched greedy decoding, with an optional key/value cache (chapter 8).

Shape letters: B batch, S source length, T generated length.
"""

from __future__ import annotations

import torch
from torch import Tensor

from autograder.reference.model import DecoderCache, EncoderDecoder


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder, src: Tensor, max_len: int, bos_id: int, eos_id: int, pad_id: int,
    use_cache: bool = False,
) -> Tensor:
    """Pick the most likely next token until every row has produced EOS or ``max_len`` tokens.

    Returns ``(B, <= max_len + 1)`` ids starting with BOS; a row that has produced EOS
    is padded with ``pad_id`` after it. ``use_cache`` keeps every layer's keys and
    values between steps instead of recomputing the prefix (same tokens, fewer FLOPs).
    """
    was_training = model.training
    model.eval()
    try:
        memory, src_mask = model.encode(src)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        cache = DecoderCache.empty(len(model.decoder.layers)) if use_cache else None
        for _ in range(max_len):
            step_in = ys[:, -1:] if use_cache else ys
            logits = model.decode(step_in, memory, src_mask, cache)[:, -1]  # (B, V)
            nxt = logits.argmax(-1).masked_fill(done, pad_id)  # (B,)
            ys = torch.cat([ys, nxt[:, None]], dim=1)  # (B, t + 1)
            done |= nxt == eos_id
            if bool(done.all()):
                break
        return ys
    finally:
        model.train(was_training)
