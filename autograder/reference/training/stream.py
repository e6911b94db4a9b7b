"""The endless stream of training batches, whose place can be saved and restored (chapter 8; the
appendix "Training that survives the real world").

Shape letters: B batch, S source length, T target length.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import Tensor

from autograder.data import batches


class TrainingBatches(Iterator[tuple[Tensor, Tensor]]):
    """Endless shuffled, bucketed batches of ``pairs`` in an order fixed by ``seed``, whose
    place in the stream can be saved and restored (``state_dict``, ``load_state_dict``).

    The generator is only drawn from when an epoch starts, so its state then and the number
    of batches taken since pin down the stream exactly; restoring replays that epoch's order
    and skips the batches already taken.
    """

    def __init__(self, pairs: Sequence, batch_size: int, pad_id: int, seed: int) -> None:
        self.pairs, self.batch_size, self.pad_id = pairs, batch_size, pad_id
        self.generator = torch.Generator().manual_seed(seed)
        self._new_epoch()

    def _new_epoch(self) -> None:
        self.epoch_state, self.taken = self.generator.get_state(), 0
        self._batches = batches(self.pairs, self.batch_size, self.pad_id, shuffle=True, generator=self.generator)

    def __next__(self) -> tuple[Tensor, Tensor]:
        batch = next(self._batches, None)
        if batch is None:
            self._new_epoch()
            batch = next(self._batches)
        self.taken += 1
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.epoch_state.clone(), "taken": self.taken}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"])
        self._new_epoch()
        for _ in range(state["taken"]):
            next(self)


def pad_to_bucket(src: Tensor, tgt: Tensor, batch_size: int, multiple: int, pad_id: int) -> tuple[Tensor, Tensor]:
    """Pad a batch to a static shape: ``batch_size`` rows, lengths rounded up to ``multiple``.

    A captured step (a CUDA graph, or a compiled model) replays fixed shapes; bucketing keeps
    their number small. The padding changes nothing the step computes: padded keys are masked,
    padded target tokens are not scored, and a row of padding only adds fully masked rows,
    whose outputs are zero. Shape: ``(B, S), (B, T) -> (batch_size, S'), (batch_size, T')``.
    """

    def pad(x: Tensor) -> Tensor:
        length = -(-x.size(1) // multiple) * multiple
        out = x.new_full((max(batch_size, x.size(0)), length), pad_id)
        out[: x.size(0), : x.size(1)] = x
        return out

    return pad(src), pad(tgt)
