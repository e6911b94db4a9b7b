"""Training and evaluating an encoder-decoder on an offline task (chapter 8).

Shape letters: B batch, S source length, T target length, V vocabulary.

Recipe (Vaswani et al., section 5): Adam with betas (0.9, 0.98) and eps 1e-9, the
warmup-then-inverse-square-root ("Noam") learning rate, label smoothing, teacher
forcing. Gradient clipping is our addition: it keeps a rare bad batch from undoing
the warmup. The trainer knows nothing of the model beyond ``model(src, tgt_in)``,
``model.config.d_model`` and what ``greedy_decode`` needs. The same loop runs alone or as
one of several data-parallel processes (``autograder.reference.distributed``), and saves
checkpoints that resume exactly (``autograder.reference.checkpoint``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn
from tqdm import tqdm  # text bars only: tqdm.auto would draw notebook widgets

from autograder.data import Task
from autograder.reference import captured, checkpoint, distributed
from autograder.reference.device import best_device
from autograder.reference.evaluation import evaluate
from autograder.reference.fused import fuse
from autograder.reference.loss import label_smoothed_loss, noam_scheduler
from autograder.reference.precision import (
    AMP_MODES,
    AUTO_LOW_PRECISION_MIN_D_MODEL,
    amp_dtype,
    autocast_for,
    precision_name,
)
from autograder.reference.stream import TrainingBatches, pad_to_bucket

__all__ = [
    "AMP_MODES", "AUTO_LOW_PRECISION_MIN_D_MODEL", "TrainConfig", "TrainingBatches", "amp_dtype", "autocast_for",
    "Run", "evaluate", "make_optimizer", "precision_name", "start_run", "step_function", "train", "train_run",
    "train_step", "training_batches",
]

@dataclass
class TrainConfig:
    steps: int = 2000             # optimizer steps in all (a resumed run goes on up to this step)
    batch_size: int = 64          # pairs per step (the global batch, shared out between processes)
    warmup: int = 400             # Noam warmup steps: the learning rate peaks here
    lr_factor: float = 1.0        # multiplies the whole Noam schedule
    smoothing: float = 0.1        # label smoothing (0 = plain cross-entropy)
    clip_norm: float | None = 1.0 # clip the global gradient norm to this (None: no clipping)
    seed: int = 0                 # batch order (the model's weights are seeded by its maker)
    amp: str | bool = "auto"      # "none", "bf16", "fp16" (+ GradScaler) or "auto": see amp_dtype
    progress: bool = True         # tqdm text progress bar
    eval_batch_size: int = 256    # pairs per greedy-decoding batch in evaluate()
    eval_every: int = 0           # evaluate on the validation split every N steps (0: never)
    eval_size: int = 200          # how many validation pairs those evaluations use
    stop_at: float | None = None  # stop once validation exact match reaches this (needs eval_every)
    save_every: int = 0           # write the checkpoint every N steps (0: only at the end; needs out)
    compile: str | None = None    # torch.compile with this backend ("inductor", "aot_eager"); None: eager
    compile_plan: str | None = None  # what compile compiles: a key of captured.COMPILE_PLANS (None: COMPILE_PLAN)
    cuda_graph: bool = False      # capture the whole step as a CUDA graph (CUDA, one process, not fp16)
    bucket: int = 16              # compiled or graphed: pad lengths to a multiple of this (few static shapes)
    time_limit: float = 0.0       # stop once this run has trained this many seconds, validations included (0: never)

    @property
    def captured(self) -> bool:
        """Whether the step is compiled or graphed: its batches are padded to buckets, and "auto" may
        choose a low precision for it."""
        return self.cuda_graph or self.compile is not None


def train_step(
    model: nn.Module, src: Tensor, tgt: Tensor, optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None, smoothing: float, pad_id: int,
    *, clip_norm: float | None = 1.0, autocast=None, scaler: torch.amp.GradScaler | None = None,
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
    return distributed.all_sum(loss.item()) / world if world > 1 else loss.item()


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


def step_function(model: nn.Module, config: TrainConfig, device: torch.device, optimizer, scheduler, scaler,
                  dtype: torch.dtype | None, pad_id: int) -> Callable[[Tensor, Tensor], float]:
    """The function that takes one step on a batch, as ``train`` takes it: eager, compiled (as
    ``config.compile_plan`` says), or a replayed CUDA graph. ``optimizer``, ``scheduler``: from
    ``make_optimizer(model, config)``; ``scaler``: float16's GradScaler or None; ``dtype``: autocast's."""
    if config.cuda_graph:
        if distributed.world_size() > 1:
            raise ValueError("cuda_graph trains in one process: DistributedDataParallel's hooks cannot be captured")
        captured.prepare(optimizer, device)
        return captured.GraphedStep(model, optimizer, scheduler, smoothing=config.smoothing, pad_id=pad_id,
                                    clip_norm=config.clip_norm, dtype=dtype, device=device)
    if config.compile is None:
        net = distributed.wrap(model, device)
        autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else None
        return lambda src, tgt: train_step(net, src, tgt, optimizer, scheduler, config.smoothing, pad_id,
                                           clip_norm=config.clip_norm, autocast=autocast, scaler=scaler)
    plan = captured.compile_plan(config.compile_plan)
    if plan.fused_kernels:
        fuse(model)  # in place, before the optimizer's first step: the same parameters, the same function
    if plan.whole_loss and distributed.world_size() == 1:
        loss_of = captured.compile_loss(model, config.compile, device, smoothing=config.smoothing, pad_id=pad_id,
                                        dtype=dtype)
        return captured.loss_step(loss_of, model, optimizer, scheduler, clip_norm=config.clip_norm, scaler=scaler,
                                  device=device)
    compiled = captured.compile_model(distributed.wrap(model, device), config.compile, device)
    autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else None

    def step(src: Tensor, tgt: Tensor) -> float:
        captured.mark_step(device)
        return train_step(compiled, src, tgt, optimizer, scheduler, config.smoothing, pad_id,
                          clip_norm=config.clip_norm, autocast=autocast, scaler=scaler)

    return step


def _better(metrics: dict[str, float], best: dict[str, Any] | None) -> bool:
    """A strictly higher (exact match, token accuracy) than the best so far: a tie keeps the earlier step."""
    key = ("exact_match", "token_accuracy")
    return best is None or tuple(metrics[k] for k in key) > tuple(best["metrics"][k] for k in key)


@dataclass
class Run:
    """One training run: what its steps, validations and checkpoints share. ``start_run`` builds it and
    decides its precision (``dtype``, and ``config.amp`` as the checkpoint records it); ``train_run``
    takes its steps; whoever reports on the run reads that decision here."""

    model: nn.Module
    task: Task
    config: TrainConfig
    device: torch.device
    optimizer: torch.optim.Optimizer
    scheduler: Any
    scaler: torch.amp.GradScaler | None
    data: TrainingBatches
    dtype: torch.dtype | None  # autocast's dtype for the steps (None: float32)
    out: str | Path | None
    task_spec: dict[str, Any] | None
    step: int = 0
    history: list[float] = field(default_factory=list)
    best: dict[str, Any] | None = None
    metrics: dict[str, float] | None = None
    train_seconds: float = 0.0  # in training steps, evaluation excluded

    @property
    def precision(self) -> str:
        """What the steps run in, as a checkpoint records it: "fp32", "bf16" or "fp16"."""
        return precision_name(self.dtype)

    def save(self) -> None:
        """Write the checkpoint (rank 0; every rank takes part in gathering the generators)."""
        rng = distributed.gather(checkpoint.rng_state())
        if self.out is not None and distributed.is_main():
            checkpoint.save(checkpoint.snapshot(
                step=self.step, model=self.model, optimizer=self.optimizer, scheduler=self.scheduler,
                scaler=self.scaler, data=self.data.state_dict(), rng=rng, train_config=self.config,
                history=self.history, task=self.task_spec, metrics=self.metrics, device_type=self.device.type,
                precision=self.precision, best=self.best), self.out)

    def validate(self, valid: list, callback: Callable[[int, dict], None] | None) -> dict[str, float]:
        """Decode ``valid`` greedily, keep the best weights, tell ``callback``; every rank evaluates
        (their weights are equal), so all agree on when to stop."""
        metrics = evaluate(self.model, valid, self.task.tgt_vocab, batch_size=self.config.eval_batch_size,
                           device=self.device)
        metrics.update(loss=self.history[-1], train_seconds=self.train_seconds)
        self.metrics = metrics
        if _better(metrics, self.best):
            self.best = checkpoint.best_weights(self.step, self.model, metrics)
        if callback is not None and distributed.is_main():
            callback(self.step, metrics)
        return metrics


def start_run(model: nn.Module, task: Task, config: TrainConfig | None = None,
              device: torch.device | str | None = None, *, resume: dict[str, Any] | None = None,
              out: str | Path | None = None, task_spec: dict[str, Any] | None = None) -> Run:
    """Place the model, decide the precision (the one place that does), build the optimizer and the
    batches, and restore ``resume`` into them: the run ready for its first step. The arguments are
    ``train``'s."""
    config = config or TrainConfig()
    if device is None:
        device = checkpoint.saved_device(resume) if resume is not None else best_device()
    device = torch.device(device)
    model.to(device)
    dtype = amp_dtype(device, config.amp, d_model=int(cast(Any, model).config.d_model), captured=config.captured)
    precision = precision_name(dtype)
    config = replace(config, amp=checkpoint.AMP_OF_PRECISION[precision])  # the checkpoint records what "auto" chose
    optimizer, scheduler = make_optimizer(model, config)
    scaler = torch.amp.GradScaler(device.type) if dtype == torch.float16 else None
    run = Run(model, task, config, device, optimizer, scheduler, scaler, training_batches(task, config), dtype,
              out, task_spec)
    if resume is not None:
        checkpoint.warn_if_changed(resume, device.type, precision)
        run.step = checkpoint.restore(resume, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler,
                                      data=run.data, rank=distributed.rank(), world_size=distributed.world_size())
        run.history, run.best = list(resume["history"]), resume.get("best")
    return run


def _loop(run: Run, take_step: Callable[[Tensor, Tensor], float],
          callback: Callable[[int, dict], None] | None) -> None:
    """Take the steps from the run's step up to ``config.steps``, validating and saving on schedule."""
    config, pad_id = run.config, run.task.tgt_vocab.pad_id
    valid = run.task.valid[: config.eval_size]
    bar = tqdm(range(run.step + 1, config.steps + 1), initial=run.step, total=config.steps,
               disable=not config.progress or not distributed.is_main(), desc=f"train {run.task.name}")
    started = time.perf_counter()
    for step in bar:
        run.step = step
        src, tgt = next(run.data)
        if config.captured:
            src, tgt = pad_to_bucket(src, tgt, config.batch_size, config.bucket, pad_id)
        src, tgt = (distributed.shard(x).to(run.device, non_blocking=True) for x in (src, tgt))
        start = time.perf_counter()
        run.history.append(take_step(src, tgt))
        run.train_seconds += time.perf_counter() - start  # .item() above waited for the device
        if run.step % 50 == 0 or run.step == config.steps:
            bar.set_postfix(loss=f"{run.history[-1]:.3f}", refresh=False)
        out_of_time = bool(config.time_limit) and time.perf_counter() - started >= config.time_limit
        if config.time_limit and distributed.world_size() > 1:  # the ranks' clocks differ: stop together
            out_of_time = distributed.all_sum(out_of_time) > 0
        stop = out_of_time
        if config.eval_every and valid and (run.step % config.eval_every == 0 or run.step == config.steps
                                            or out_of_time):
            metrics = run.validate(valid, callback)
            bar.set_postfix(loss=f"{run.history[-1]:.3f}", valid_em=f"{metrics['exact_match']:.3f}")
            stop = stop or (config.stop_at is not None and metrics["exact_match"] >= config.stop_at)
        if run.out is not None and config.save_every and run.step % config.save_every == 0 \
                and run.step != config.steps:
            run.save()
        if stop:
            break
    bar.close()


def train(
    model: nn.Module, task: Task, config: TrainConfig | None = None, device: torch.device | str | None = None,
    callback: Callable[[int, dict], None] | None = None, *, out: str | Path | None = None,
    resume: dict[str, Any] | None = None, task_spec: dict[str, Any] | None = None,
) -> list[float]:
    """Train ``model`` on ``task.train`` with the textbook recipe; return the loss of every step.

    Runs on ``device``; when it is None, on the checkpoint's device with ``resume`` (if this
    machine has one), else on ``best_device()``. With ``config.eval_every``, every that many steps
    the first ``config.eval_size`` validation pairs are decoded greedily; ``callback(step,
    metrics)`` then gets ``evaluate``'s dict plus ``loss`` and ``train_seconds`` (time spent in
    training steps so far, evaluation excluded), and training stops early once exact match
    reaches ``config.stop_at``. With ``config.time_limit``, training stops after the first step that
    ends that many seconds after this call's first step (validations included), and validates
    there when it validates at all. The model ends with the last step's weights; the checkpoint
    also keeps the best validated ones (``checkpoint.load_model`` returns those).

    Args:
        out: write a checkpoint there at the end (and every ``config.save_every`` steps).
        resume: a loaded checkpoint (``checkpoint.load``): go on from its step up to
            ``config.steps``, exactly as if the run had never stopped, when the device type and
            the precision are the checkpoint's (a warning says when either changes). The
            returned list then holds the losses of the whole run, the checkpoint's included.
        task_spec: ``make_task``'s arguments, stored in the checkpoint so that it can rebuild the data.

    Launched by ``torchrun``, each process trains on its share of every batch through
    DistributedDataParallel; only rank 0 shows the bar and writes the checkpoint.
    """
    return train_run(start_run(model, task, config, device, resume=resume, out=out, task_spec=task_spec), callback)


def train_run(run: Run, callback: Callable[[int, dict], None] | None = None) -> list[float]:
    """Take the steps of ``run`` (from ``start_run``) as ``train`` does, write its checkpoint at the end
    when it has ``out``, and return the loss of every step of the run."""
    take_step = step_function(run.model, run.config, run.device, run.optimizer, run.scheduler, run.scaler,
                              run.dtype, run.task.tgt_vocab.pad_id)
    _loop(run, take_step, callback)
    if run.out is not None:
        run.save()
    return run.history
