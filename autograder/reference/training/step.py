"""One training step (chapter 8): ``train_step``, the teacher-forced step the book shows, and
``optimizer_step``, its second half (backward, clipping, Adam, the schedule), which the compiled
step takes too; ``make_optimizer``, Adam with the Noam schedule; ``training_batches``; and
``step_function``, the step as ``train`` takes it: eager, compiled (as ``config.compile_plan``
says) or a replayed CUDA graph.

Shape letters: B batch, S source length, T target length, V vocabulary.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, cast

import torch
from torch import Tensor, nn

from autograder.data import Task
from autograder.reference.fused import fuse
from autograder.reference.loss import label_smoothed_loss, noam_scheduler
from autograder.reference.training import captured, distributed
from autograder.reference.training.stream import TrainingBatches
from autograder.reference.training.train_config import TrainConfig


def train_step(
    model: nn.Module,
    src: Tensor,
    tgt: Tensor,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None,
    smoothing: float,
    pad_id: int,
    *,
    clip_norm: float | None = 1.0,
    autocast=None,
    scaler: torch.amp.GradScaler | None = None,
) -> float:
    """One teacher-forced optimizer step; returns the label-smoothed loss as a float.

    The decoder reads ``tgt[:, :-1]`` (BOS ...) and is scored on ``tgt[:, 1:]`` (... EOS):
    position t predicts token t + 1. The loss is averaged over non-pad target tokens; when
    several processes share the batch, over the non-pad tokens of the whole global batch.

    Args:
        model: maps ``(src (B, S), tgt_in (B, T - 1))`` to logits ``(B, T - 1, V)``
            (or its DistributedDataParallel wrapper).
        src, tgt: a batch from ``autograder.data.batches`` (this process's share of it);
            tgt holds BOS ... EOS.
        optimizer, scheduler: stepped once each (scheduler may be None).
        smoothing: label smoothing; pad_id: the padding id of the target vocabulary.
        clip_norm: clip the global gradient norm (None: no clipping).
        autocast, scaler: mixed precision, from ``autocast_for`` (None: float32).
    """
    model.train()
    optimizer.zero_grad(set_to_none=True)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # (B, T - 1) each: the shift of teacher forcing
    with autocast if autocast is not None else contextlib.nullcontext():
        logits = model(src, tgt_in)  # (B, T - 1, V)
    loss = label_smoothed_loss(logits, tgt_out, smoothing, pad_id)  # in float32 either way
    world = distributed.world_size()
    if world > 1:
        # DDP averages gradients over ranks; the two halves of a batch may hold different
        # numbers of target tokens, so scale this rank's token sum by world / global count.
        tokens = int((tgt_out != pad_id).sum())
        loss = loss * (tokens * world / max(distributed.all_sum(tokens), 1.0))
    optimizer_step(loss, model, optimizer, scheduler, clip_norm=clip_norm, scaler=scaler)
    return distributed.all_sum(loss.item()) / world if world > 1 else loss.item()


def optimizer_step(
    loss: Tensor,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None,
    *,
    clip_norm: float | None,
    scaler: torch.amp.GradScaler | None,
) -> None:
    """Backward from ``loss``, then one step: the gradients clipped, Adam, the schedule. With
    float16's ``scaler`` the loss is scaled before backward and the gradients unscaled before
    clipping; the scaler steps the optimizer (skipping a step whose gradients overflowed) and
    updates its scale. The step of ``train_step`` and of the compiled forward-and-loss alike."""
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
    else:
        loss.backward()
    if clip_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    if scheduler is not None:
        scheduler.step()


def make_optimizer(model: nn.Module, config: TrainConfig):
    """Adam with betas (0.9, 0.98), eps 1e-9 and the Noam schedule: ``(optimizer, scheduler)``.
    Adam runs its ``foreach`` loop, or its fused kernel where the compile plan asks for it."""
    compiled = config.compile is not None and not config.cuda_graph
    fused = compiled and captured.compile_plan(config.compile_plan).fused_adam
    kind = {"fused": True} if fused else {"foreach": True}
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, **kind)
    d_model = int(cast(Any, model).config.d_model)
    return optimizer, noam_scheduler(optimizer, d_model, config.warmup, config.lr_factor)


def training_batches(task: Task, config: TrainConfig) -> TrainingBatches:
    """Endless shuffled, bucketed batches of ``task.train``, in an order fixed by ``config.seed``."""
    return TrainingBatches(task.train, config.batch_size, task.tgt_vocab.pad_id, config.seed)


def step_function(
    model: nn.Module,
    config: TrainConfig,
    device: torch.device,
    optimizer,
    scheduler,
    scaler,
    dtype: torch.dtype | None,
    pad_id: int,
) -> Callable[[Tensor, Tensor], float]:
    """The function that takes one step on a batch, as ``train`` takes it: eager, compiled (as
    ``config.compile_plan`` says), or a replayed CUDA graph. ``optimizer``, ``scheduler``: from
    ``make_optimizer(model, config)``; ``scaler``: float16's GradScaler or None; ``dtype``: autocast's."""
    if config.cuda_graph:
        if distributed.world_size() > 1:
            raise ValueError("cuda_graph trains in one process: DistributedDataParallel's hooks cannot be captured")
        captured.prepare(optimizer, device)
        return captured.GraphedStep(
            model,
            optimizer,
            scheduler,
            smoothing=config.smoothing,
            pad_id=pad_id,
            clip_norm=config.clip_norm,
            dtype=dtype,
            device=device,
        )

    def eager(net: nn.Module) -> Callable[[Tensor, Tensor], float]:  # train_step, with the run's settings
        autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else None
        return lambda src, tgt: train_step(
            net,
            src,
            tgt,
            optimizer,
            scheduler,
            config.smoothing,
            pad_id,
            clip_norm=config.clip_norm,
            autocast=autocast,
            scaler=scaler,
        )

    if (backend := config.compile) is None:
        return eager(distributed.wrap(model, device))
    plan = captured.compile_plan(config.compile_plan)
    if plan.fused_kernels:
        fuse(model)  # in place, before the optimizer's first step: the same parameters, the same function
    if plan.whole_loss and distributed.world_size() == 1:
        loss_of = captured.compile_loss(model, backend, device, smoothing=config.smoothing, pad_id=pad_id, dtype=dtype)
        return _loss_step(
            loss_of, model, optimizer, scheduler, clip_norm=config.clip_norm, scaler=scaler, device=device
        )
    compiled = eager(captured.compile_model(distributed.wrap(model, device), backend, device))

    def step(src: Tensor, tgt: Tensor) -> float:
        captured.mark_step(device)
        return compiled(src, tgt)

    return step


def _loss_step(
    loss_of: Callable[[Tensor, Tensor], Tensor],
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    *,
    clip_norm: float | None,
    scaler: torch.amp.GradScaler | None,
    device: torch.device,
) -> Callable[[Tensor, Tensor], float]:
    """The step of ``train_step`` around a compiled forward-and-loss ``loss_of``
    (``captured.compile_loss``): ``optimizer_step`` as there; one process (several compile the model)."""

    def step(src: Tensor, tgt: Tensor) -> float:
        captured.mark_step(device)
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(src, tgt)
        optimizer_step(loss, model, optimizer, scheduler, clip_norm=clip_norm, scaler=scaler)
        return loss.item()

    return step
