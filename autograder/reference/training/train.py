"""Training and evaluating an encoder-decoder on an offline task (chapter 8).

Shape letters: B batch, S source length, T target length, V vocabulary.

Recipe (Vaswani et al., section 5): Adam with betas (0.9, 0.98) and eps 1e-9, the
warmup-then-inverse-square-root ("Noam") learning rate, label smoothing, teacher
forcing. Gradient clipping is our addition: it keeps a rare bad batch from undoing
the warmup. The trainer knows nothing of the model beyond ``model(src, tgt_in)``,
``model.config.d_model`` and what ``greedy_decode`` needs. The same loop runs alone or as
one of several data-parallel processes (``autograder.reference.training.distributed``), and saves
checkpoints that resume exactly (``autograder.reference.training.checkpoint``). One step is in
``autograder.reference.training.step``, the settings in ``autograder.reference.training.train_config``; both
are importable from here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn
from tqdm import tqdm  # text bars only: tqdm.auto would draw notebook widgets

from autograder.data import Task
from autograder.reference.device import best_device
from autograder.reference.training import checkpoint, distributed
from autograder.reference.training.evaluation import evaluate
from autograder.reference.training.precision import (
    AMP_MODES,
    AUTO_LOW_PRECISION_MIN_D_MODEL,
    amp_dtype,
    autocast_for,
    precision_name,
)
from autograder.reference.training.step import make_optimizer, step_function, train_step, training_batches
from autograder.reference.training.stream import TrainingBatches, pad_to_bucket
from autograder.reference.training.train_config import TrainConfig

__all__ = [
    "AMP_MODES",
    "AUTO_LOW_PRECISION_MIN_D_MODEL",
    "TrainConfig",
    "TrainingBatches",
    "amp_dtype",
    "autocast_for",
    "Run",
    "evaluate",
    "make_optimizer",
    "precision_name",
    "start_run",
    "step_function",
    "train",
    "train_run",
    "train_step",
    "training_batches",
]


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
            checkpoint.save(
                checkpoint.snapshot(
                    step=self.step,
                    model=self.model,
                    optimizer=self.optimizer,
                    scheduler=self.scheduler,
                    scaler=self.scaler,
                    data=self.data.state_dict(),
                    rng=rng,
                    train_config=self.config,
                    history=self.history,
                    task=self.task_spec,
                    metrics=self.metrics,
                    device_type=self.device.type,
                    precision=self.precision,
                    best=self.best,
                ),
                self.out,
            )

    def validate(self, valid: list, callback: Callable[[int, dict], None] | None) -> dict[str, float]:
        """Decode ``valid`` greedily, keep the best weights, tell ``callback``; every rank evaluates
        (their weights are equal), so all agree on when to stop."""
        metrics = evaluate(
            self.model, valid, self.task.tgt_vocab, batch_size=self.config.eval_batch_size, device=self.device
        )
        metrics.update(loss=self.history[-1], train_seconds=self.train_seconds)
        self.metrics = metrics
        if _better(metrics, self.best):
            self.best = checkpoint.best_weights(self.step, self.model, metrics)
        if callback is not None and distributed.is_main():
            callback(self.step, metrics)
        return metrics


def start_run(
    model: nn.Module,
    task: Task,
    config: TrainConfig | None = None,
    device: torch.device | str | None = None,
    *,
    resume: dict[str, Any] | None = None,
    out: str | Path | None = None,
    task_spec: dict[str, Any] | None = None,
) -> Run:
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
    run = Run(
        model, task, config, device, optimizer, scheduler, scaler, training_batches(task, config), dtype, out, task_spec
    )
    if resume is not None:
        checkpoint.warn_if_changed(resume, device.type, precision)
        run.step = checkpoint.restore(
            resume,
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            scaler=scaler,
            data=run.data,
            rank=distributed.rank(),
            world_size=distributed.world_size(),
        )
        run.history, run.best = list(resume["history"]), resume.get("best")
    return run


def _loop(run: Run, take_step: Callable[[Tensor, Tensor], float], callback: Callable[[int, dict], None] | None) -> None:
    """Take the steps from the run's step up to ``config.steps``, validating and saving on schedule."""
    config, pad_id = run.config, run.task.tgt_vocab.pad_id
    valid = run.task.valid[: config.eval_size]
    bar = tqdm(
        range(run.step + 1, config.steps + 1),
        initial=run.step,
        total=config.steps,
        disable=not config.progress or not distributed.is_main(),
        desc=f"train {run.task.name}",
    )
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
        if (
            config.eval_every
            and valid
            and (run.step % config.eval_every == 0 or run.step == config.steps or out_of_time)
        ):
            metrics = run.validate(valid, callback)
            bar.set_postfix(loss=f"{run.history[-1]:.3f}", valid_em=f"{metrics['exact_match']:.3f}")
            stop = stop or (config.stop_at is not None and metrics["exact_match"] >= config.stop_at)
        if run.out is not None and config.save_every and run.step % config.save_every == 0 and run.step != config.steps:
            run.save()
        if stop:
            break
    bar.close()


def train(
    model: nn.Module,
    task: Task,
    config: TrainConfig | None = None,
    device: torch.device | str | None = None,
    callback: Callable[[int, dict], None] | None = None,
    *,
    out: str | Path | None = None,
    resume: dict[str, Any] | None = None,
    task_spec: dict[str, Any] | None = None,
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
    take_step = step_function(
        run.model,
        run.config,
        run.device,
        run.optimizer,
        run.scheduler,
        run.scaler,
        run.dtype,
        run.task.tgt_vocab.pad_id,
    )
    _loop(run, take_step, callback)
    if run.out is not None:
        run.save()
    return run.history
