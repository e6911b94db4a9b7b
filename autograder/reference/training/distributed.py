"""Data parallelism on ``torch.distributed``: one process per device, each on its share of a batch
(chapter 8; the appendix "Training that survives the real world").

Shape letters: B batch (the global batch of one optimizer step), L any length.

``torchrun --nproc_per_node N ...`` starts N copies of the same program and tells each its
``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` through the environment. Every copy builds the
same model and reads the same stream of global batches; ``shard`` keeps this rank's rows.
``DistributedDataParallel`` averages the gradients over the ranks (an all-reduce during
``backward()``), so every rank takes the same optimizer step and the copies stay equal.
Run as a plain program (no ``WORLD_SIZE``), everything here is a no-op: world size 1, rank 0.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn


def launched() -> bool:
    """True when this process was started by ``torchrun`` (or anything that sets ``WORLD_SIZE``)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def active() -> bool:
    """True once a process group of more than one process is up."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    """Only rank 0 prints and writes files."""
    return rank() == 0


def setup(device: torch.device) -> torch.device:
    """Join the process group that ``torchrun`` describes; return this rank's device.

    NCCL for CUDA (one GPU per process: ``cuda:LOCAL_RANK``), gloo for the CPU. The
    rendezvous address comes from the environment (``MASTER_ADDR``/``MASTER_PORT``,
    set by ``torchrun``). Without ``torchrun`` this returns ``device`` unchanged.
    """
    if not launched() or active():
        return device
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def teardown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap(model: nn.Module, device: torch.device) -> nn.Module:
    """``model`` inside ``DistributedDataParallel`` when several processes train, else ``model``."""
    if not active():
        return model
    ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)


def shard(batch: Tensor) -> Tensor:
    """This rank's rows of a global batch: contiguous, sizes differing by at most one.

    Shape: ``(B, L) -> (about B / world_size, L)``.
    """
    return torch.tensor_split(batch, world_size())[rank()]


def all_sum(value: float | int) -> float:
    """The sum of ``value`` over all ranks (itself when training alone)."""
    if not active():
        return float(value)
    t = torch.tensor([float(value)], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t)
    return float(t.item())


def gather(obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order (``[obj]`` when training alone)."""
    if not active():
        return [obj]
    out: list[Any] = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out
