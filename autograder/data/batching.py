"""Padding pairs into batches (chapter 8).

Shape letters: B batch, S source length, T target length.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from autograder.data.vocab import PAD_ID

Pair = tuple[Sequence[int], Sequence[int]]


def _pad(seqs: Sequence[Sequence[int]], pad_id: int) -> Tensor:
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out


def collate(pairs: Sequence[Pair], pad_id: int = PAD_ID) -> tuple[Tensor, Tensor]:
    """Right-pad a list of ``(src_ids, tgt_ids)`` into ``src (B, S)`` and ``tgt (B, T)`` LongTensors."""
    if not pairs:
        raise ValueError("collate needs at least one pair")
    return _pad([s for s, _ in pairs], pad_id), _pad([t for _, t in pairs], pad_id)


def batches(
    pairs: Sequence[Pair],
    batch_size: int,
    pad_id: int = PAD_ID,
    shuffle: bool = True,
    generator: torch.Generator | None = None,
    bucket: int = 50,
) -> Iterator[tuple[Tensor, Tensor]]:
    """Yield ``collate``d batches covering every pair once (the last one may be smaller).

    With ``shuffle``, pairs are shuffled, then each pool of ``bucket`` batches is sorted
    by source length before it is cut, so a batch holds pairs of similar length and
    little padding; the order of the batches is shuffled again. Without ``shuffle``
    the pairs keep their order (for evaluation).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not shuffle:
        for i in range(0, len(pairs), batch_size):
            yield collate(pairs[i : i + batch_size], pad_id)
        return
    order = torch.randperm(len(pairs), generator=generator).tolist()
    pool = batch_size * max(1, bucket)
    chunks = []
    for i in range(0, len(order), pool):
        part = sorted(order[i : i + pool], key=lambda j: (len(pairs[j][0]), len(pairs[j][1])))
        chunks += [part[k : k + batch_size] for k in range(0, len(part), batch_size)]
    for c in torch.randperm(len(chunks), generator=generator).tolist():
        yield collate([pairs[j] for j in chunks[c]], pad_id)
