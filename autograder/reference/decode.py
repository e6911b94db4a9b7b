"""Batched greedy decoding, with an optional key/value cache (chapter 8).

Shape letters: B batch, S source length, T generated length, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from autograder.reference.model import EncoderDecoder


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    use_cache: bool = False,
) -> Tensor:
    """Pick the most likely next token until every row has produced EOS or ``max_len`` tokens.

    Returns ``(B, <= max_len + 1)`` ids starting with BOS; a row that has produced EOS
    is padded with ``pad_id`` after it. ``use_cache`` keeps every layer's keys and
    values between steps instead of recomputing the prefix (same tokens, fewer FLOPs).
    The loop is ``decode_loop``'s; greedy decoding's rule is the argmax of the logits.
    """
    return decode_loop(model, src, max_len, bos_id, eos_id, pad_id, lambda logits: logits.argmax(-1), use_cache)


@torch.no_grad()
def decode_loop(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    next_token: Callable[[Tensor], Tensor],
    use_cache: bool = False,
) -> Tensor:
    """Append ``next_token(logits)`` to every row until each has produced EOS or ``max_len`` tokens.

    The loop of ``greedy_decode`` (the argmax) and ``generate.sample`` (a draw). A ``done``
    flag per row: a finished row gets ``pad_id`` from then on, and the loop ends when every
    row is done. ``next_token`` maps the last position's logits ``(B, V)`` to ids ``(B,)``.
    """
    was_training = model.training
    model.eval()
    try:
        memory, src_mask = model.encode(src)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        cache = model.new_cache() if use_cache else None
        for _ in range(max_len):
            step_in = ys[:, -1:] if use_cache else ys
            logits = model.decode(step_in, memory, src_mask, cache)[:, -1]  # (B, V)
            nxt = next_token(logits).masked_fill(done, pad_id)  # (B,)
            ys = torch.cat([ys, nxt[:, None]], dim=1)  # (B, t + 1)
            done |= nxt == eos_id
            if bool(done.all()):
                break
        return ys
    finally:
        model.train(was_training)
