"""Scoring a trained encoder-decoder by greedy decoding (chapter 8).

Shape letters: B batch, T target length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import nn

from autograder.data import BOS_ID, EOS_ID, PAD_ID, Vocab, batches
from autograder.reference.decode import greedy_decode


@torch.no_grad()
def evaluate(
    model: nn.Module,
    pairs: Sequence,
    tgt_vocab: Vocab | None = None,
    *,
    batch_size: int = 256,
    device: torch.device | str | None = None,
    pad_id: int = PAD_ID,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    use_cache: bool = False,
) -> dict[str, float]:
    """Greedy-decode every source and compare with its target.

    Returns ``exact_match`` (fraction of pairs whose output, up to and including EOS,
    equals the target) and ``token_accuracy`` (fraction of target tokens after BOS,
    EOS included, predicted at the right position). The special ids come from
    ``tgt_vocab`` when it is given. Runs on the model's device unless ``device`` is given.
    """
    if tgt_vocab is not None:
        pad_id, bos_id, eos_id = tgt_vocab.pad_id, tgt_vocab.bos_id, tgt_vocab.eos_id
    if not pairs:
        raise ValueError("evaluate needs at least one pair")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    exact = correct = tokens = 0
    for src, tgt in batches(pairs, batch_size, pad_id, shuffle=False):
        src, gold = src.to(device), tgt[:, 1:].to(device)  # gold (B, T - 1): ... EOS, then padding
        ys = greedy_decode(cast(Any, model), src, gold.size(1), bos_id, eos_id, pad_id, use_cache=use_cache)
        pred = torch.full_like(gold, pad_id)
        pred[:, : ys.size(1) - 1] = ys[:, 1:]  # (B, T - 1): drop BOS, pad rows that stopped early
        real = gold != pad_id
        hit = pred == gold
        exact += int((hit | ~real).all(dim=1).sum())
        correct += int((hit & real).sum())
        tokens += int(real.sum())
    return {"exact_match": exact / len(pairs), "token_accuracy": correct / tokens}
