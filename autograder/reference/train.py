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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn
from tqdm import tqdm  # text bars only: tqdm.auto would draw notebook widgets

from autograder.data import BOS_ID, EOS_ID, PAD_ID, Task, Vocab, batches
from autograder.reference import checkpoint, distributed
from autograder.reference.decode import greedy_decode
from autograder.reference.device import best_device
from autograder.reference.loss import label_smoothed_loss, noam_scheduler

AMP_MODES = ("none", "bf16", "fp16", "auto")


@dataclass
class TrainConfig:
    steps: int = 2000             # optimizer steps in all (a resumed run goes on up to this step)
    batch_size: int = 64          # pairs per step (the global batch, shared out between processes)
    warmup: int = 400             # Noam warmup steps: the learning rate peaks here
    lr_factor: float = 1.0        # multiplies the whole Noam schedule
    smoothing: float = 0.1        # label smoothing (0 = plain cross-entropy)
    clip_norm: float | None = 1.0 # clip the global gradient norm to this (None: no clipping)
    seed: int = 0                 # batch order (the model's weights are seeded by its maker)
    amp: str | bool = "auto"      # "none", "bf16", "fp16" (+ GradScaler) or "auto": bf16 on CUDA when
                                  # supported, else fp16 on CUDA, plain float32 on CPU and MPS
    progress: bool = True         # tqdm text progress bar
    eval_batch_size: int = 256    # pairs per greedy-decoding batch in evaluate()
    eval_every: int = 0           # evaluate on the validation split every N steps (0: never)
    eval_size: int = 200          # how many validation pairs those evaluations use
    stop_at: float | None = None  # stop once validation exact match reaches this (needs eval_every)
    save_every: int = 0           # write the checkpoint every N steps (0: only at the end; needs out)


def amp_dtype(device: torch.device, amp: str | bool) -> torch.dtype | None:
    """The autocast dtype that ``amp`` means on ``device`` (None: plain float32).

    ``True`` and ``False`` are read as ``"auto"`` and ``"none"``.
    """
    mode = {True: "auto", False: "none"}.get(amp, amp) if isinstance(amp, bool) else amp
    if mode not in AMP_MODES:
        raise ValueError(f"amp must be one of {', '.join(AMP_MODES)}, got {amp!r}")
    if mode == "auto":
        if device.type != "cuda":
            return None  # a CPU gains little from autocast; MPS support varies between versions
        mode = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"none": None, "bf16": torch.bfloat16, "fp16": torch.float16}[mode]


def autocast_for(device: torch.device, amp: str | bool):
    """``(context, scaler)``: autocast for ``device`` in the dtype ``amp`` asks for, and a
    GradScaler for float16 (bfloat16 keeps float32's exponent range and needs none).

    The same code serves every device: only ``device.type`` changes between the CPU and CUDA.
    """
    dtype = amp_dtype(device, amp)
    if dtype is None:
        return contextlib.nullcontext(), None
    if not torch.amp.is_autocast_available(device.type):
        raise ValueError(f"this torch ({torch.__version__}) has no autocast for {device.type}")
    scaler = torch.amp.GradScaler(device.type) if dtype == torch.float16 else None
    return torch.autocast(device.type, dtype=dtype), scaler


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
    """Adam with betas (0.9, 0.98), eps 1e-9 and the Noam schedule: ``(optimizer, scheduler)``."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, foreach=True)
    d_model = int(cast(Any, model).config.d_model)
    return optimizer, noam_scheduler(optimizer, d_model, config.warmup, config.lr_factor)


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


def training_batches(task: Task, config: TrainConfig) -> TrainingBatches:
    """Endless shuffled, bucketed batches of ``task.train``, in an order fixed by ``config.seed``."""
    return TrainingBatches(task.train, config.batch_size, task.tgt_vocab.pad_id, config.seed)


def train(
    model: nn.Module, task: Task, config: TrainConfig | None = None, device: torch.device | str | None = None,
    callback: Callable[[int, dict], None] | None = None, *, out: str | Path | None = None,
    resume: dict[str, Any] | None = None, task_spec: dict[str, Any] | None = None,
) -> list[float]:
    """Train ``model`` on ``task.train`` with the textbook recipe; return the loss of every step.

    Runs on ``best_device()`` unless ``device`` is given (the model is moved there).
    With ``config.eval_every``, every that many steps the first ``config.eval_size``
    validation pairs are decoded greedily; ``callback(step, metrics)`` then gets
    ``evaluate``'s dict plus ``loss`` and ``train_seconds`` (time spent in training
    steps so far, evaluation excluded), and training stops early once exact match
    reaches ``config.stop_at``.

    Args:
        out: write a checkpoint there at the end (and every ``config.save_every`` steps).
        resume: a loaded checkpoint (``checkpoint.load``): go on from its step up to
            ``config.steps``, exactly as if the run had never stopped. The returned list
            then holds the losses of the whole run, the checkpoint's included.
        task_spec: ``make_task``'s arguments, stored in the checkpoint so that it can rebuild the data.

    Launched by ``torchrun``, each process trains on its share of every batch through
    DistributedDataParallel; only rank 0 shows the bar and writes the checkpoint.
    """
    config = config or TrainConfig()
    device = torch.device(device) if device is not None else best_device()
    model.to(device)
    pad_id = task.tgt_vocab.pad_id
    optimizer, scheduler = make_optimizer(model, config)
    autocast, scaler = autocast_for(device, config.amp)
    data = training_batches(task, config)
    history: list[float] = []
    step = 0
    if resume is not None:
        step = checkpoint.restore(resume, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler,
                                  data=data, rank=distributed.rank(), world_size=distributed.world_size())
        history = list(resume["history"])
    net = distributed.wrap(model, device)
    valid = task.valid[: config.eval_size]
    metrics: dict[str, float] | None = None
    train_seconds = 0.0

    def save() -> None:
        rng = distributed.gather(checkpoint.rng_state())  # every rank takes part; rank 0 writes
        if out is not None and distributed.is_main():
            checkpoint.save(checkpoint.snapshot(
                step=step, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler,
                data=data.state_dict(), rng=rng, train_config=config, history=history, task=task_spec,
                metrics=metrics), out)

    bar = tqdm(range(step + 1, config.steps + 1), initial=step, total=config.steps,
               disable=not config.progress or not distributed.is_main(), desc=f"train {task.name}")
    for step in bar:
        src, tgt = (distributed.shard(x).to(device, non_blocking=True) for x in next(data))
        start = time.perf_counter()
        history.append(train_step(net, src, tgt, optimizer, scheduler, config.smoothing, pad_id,
                                  clip_norm=config.clip_norm, autocast=autocast, scaler=scaler))
        train_seconds += time.perf_counter() - start  # .item() above waited for the device
        if step % 50 == 0 or step == config.steps:
            bar.set_postfix(loss=f"{history[-1]:.3f}", refresh=False)
        stop = False
        if config.eval_every and (step % config.eval_every == 0 or step == config.steps) and valid:
            # every rank evaluates (their weights are equal), so all agree on when to stop
            metrics = evaluate(model, valid, task.tgt_vocab, batch_size=config.eval_batch_size, device=device)
            metrics.update(loss=history[-1], train_seconds=train_seconds)
            if callback is not None and distributed.is_main():
                callback(step, metrics)
            bar.set_postfix(loss=f"{history[-1]:.3f}", valid_em=f"{metrics['exact_match']:.3f}")
            stop = config.stop_at is not None and metrics["exact_match"] >= config.stop_at
        if out is not None and config.save_every and step % config.save_every == 0 and step != config.steps:
            save()
        if stop:
            break
    bar.close()
    if out is not None:
        save()
    return history
@torch.no_grad()
def evaluate(
    model: nn.Module, pairs: Sequence, tgt_vocab: Vocab | None = None, *, batch_size: int = 256,
    device: torch.device | str | None = None, pad_id: int = PAD_ID, bos_id: int = BOS_ID,
    eos_id: int = EOS_ID, use_cache: bool = False,
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
