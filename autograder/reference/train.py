"""Training and evaluating an encoder-decoder on an offline task (chapter 8).

Shape letters: B batch, S source length, T target length, V vocabulary.

Recipe (Vaswani et al., section 5): Adam with betas (0.9, 0.98) and eps 1e-9, the
warmup-then-inverse-square-root ("Noam") learning rate, label smoothing, teacher
forcing. Gradient clipping is our addition: it keeps a rare bad batch from undoing
the warmup. The trainer knows nothing of the model beyond ``model(src, tgt_in)``,
``model.config.d_model`` and what ``greedy_decode`` needs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from tqdm import tqdm  # text bars only: tqdm.auto would draw notebook widgets

from autograder.data import BOS_ID, EOS_ID, PAD_ID, Task, Vocab, batches
from autograder.reference.decode import greedy_decode
from autograder.reference.device import best_device
from autograder.reference.loss import label_smoothed_loss, noam_scheduler


@dataclass
class TrainConfig:
    steps: int = 2000             # optimizer steps (one batch each)
    batch_size: int = 64          # pairs per step
    warmup: int = 400             # Noam warmup steps: the learning rate peaks here
    lr_factor: float = 1.0        # multiplies the whole Noam schedule
    smoothing: float = 0.1        # label smoothing (0 = plain cross-entropy)
    clip_norm: float | None = 1.0 # clip the global gradient norm to this (None: no clipping)
    seed: int = 0                 # batch order (the model's weights are seeded by its maker)
    amp: bool = True              # mixed precision, used on CUDA only (bfloat16, else float16 + scaler)
    progress: bool = True         # tqdm text progress bar
    eval_batch_size: int = 256    # pairs per greedy-decoding batch in evaluate()
    eval_every: int = 0           # evaluate on the validation split every N steps (0: never)
    eval_size: int = 200          # how many validation pairs those evaluations use
    stop_at: float | None = None  # stop once validation exact match reaches this (needs eval_every)


def _autocast(device: torch.device, amp: bool):
    """``(context, scaler)`` for one device: autocast and a GradScaler only on CUDA."""
    if not (amp and device.type == "cuda"):
        return contextlib.nullcontext(), None
    if torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16), None  # bf16 keeps fp32's range: no scaler
    return torch.autocast("cuda", dtype=torch.float16), torch.amp.GradScaler("cuda")


def train_step(
    model: nn.Module, src: Tensor, tgt: Tensor, optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None, smoothing: float, pad_id: int,
    *, clip_norm: float | None = 1.0, autocast=None, scaler: torch.amp.GradScaler | None = None,
) -> float:
    """One teacher-forced optimizer step; returns the label-smoothed loss as a float.

    The decoder reads ``tgt[:, :-1]`` (BOS ...) and is scored on ``tgt[:, 1:]`` (... EOS):
    position t predicts token t + 1. The loss is averaged over non-pad target tokens.

    Args:
        model: maps ``(src (B, S), tgt_in (B, T - 1))`` to logits ``(B, T - 1, V)``.
        src, tgt: a batch from ``autograder.data.batches``; tgt holds BOS ... EOS.
        optimizer, scheduler: stepped once each (scheduler may be None).
        smoothing: label smoothing; pad_id: the padding id of the target vocabulary.
        clip_norm: clip the global gradient norm (None: no clipping).
        autocast, scaler: mixed precision on CUDA (see ``train``); leave them None on a CPU.
    """
    model.train()
    optimizer.zero_grad(set_to_none=True)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # (B, T - 1) each: the shift of teacher forcing
    with autocast if autocast is not None else contextlib.nullcontext():
        logits = model(src, tgt_in)  # (B, T - 1, V)
    loss = label_smoothed_loss(logits, tgt_out, smoothing, pad_id)  # in float32 either way
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
    return loss.item()


def make_optimizer(model: nn.Module, config: TrainConfig):
    """Adam with betas (0.9, 0.98), eps 1e-9 and the Noam schedule: ``(optimizer, scheduler)``."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, foreach=True)
    return optimizer, noam_scheduler(optimizer, model.config.d_model, config.warmup, config.lr_factor)


def training_batches(task: Task, config: TrainConfig) -> Iterator[tuple[Tensor, Tensor]]:
    """Endless shuffled, bucketed batches of ``task.train``, in an order fixed by ``config.seed``."""
    generator = torch.Generator().manual_seed(config.seed)
    while True:
        yield from batches(task.train, config.batch_size, task.tgt_vocab.pad_id, shuffle=True, generator=generator)


def train(
    model: nn.Module, task: Task, config: TrainConfig | None = None, device: torch.device | str | None = None,
    callback: Callable[[int, dict], None] | None = None,
) -> list[float]:
    """Train ``model`` on ``task.train`` with the textbook recipe; return the loss of every step.

    Runs on ``best_device()`` unless ``device`` is given (the model is moved there).
    With ``config.eval_every``, every that many steps the first ``config.eval_size``
    validation pairs are decoded greedily; ``callback(step, metrics)`` then gets
    ``evaluate``'s dict plus ``loss`` and ``train_seconds`` (time spent in training
    steps so far, evaluation excluded), and training stops early once exact match
    reaches ``config.stop_at``.
    """
    config = config or TrainConfig()
    device = torch.device(device) if device is not None else best_device()
    model.to(device)
    pad_id = task.tgt_vocab.pad_id
    optimizer, scheduler = make_optimizer(model, config)
    autocast, scaler = _autocast(device, config.amp)
    data = training_batches(task, config)
    valid = task.valid[: config.eval_size]
    history: list[float] = []
    train_seconds = 0.0
    bar = tqdm(range(1, config.steps + 1), disable=not config.progress, desc=f"train {task.name}")
    for step in bar:
        src, tgt = (x.to(device, non_blocking=True) for x in next(data))
        start = time.perf_counter()
        history.append(train_step(model, src, tgt, optimizer, scheduler, config.smoothing, pad_id,
                                  clip_norm=config.clip_norm, autocast=autocast, scaler=scaler))
        train_seconds += time.perf_counter() - start  # .item() above waited for the device
        if step % 50 == 0 or step == config.steps:
            bar.set_postfix(loss=f"{history[-1]:.3f}", refresh=False)
        if config.eval_every and (step % config.eval_every == 0 or step == config.steps) and valid:
            metrics = evaluate(model, valid, task.tgt_vocab, batch_size=config.eval_batch_size, device=device)
            metrics.update(loss=history[-1], train_seconds=train_seconds)
            if callback is not None:
                callback(step, metrics)
            bar.set_postfix(loss=f"{history[-1]:.3f}", valid_em=f"{metrics['exact_match']:.3f}")
            if config.stop_at is not None and metrics["exact_match"] >= config.stop_at:
                break
    bar.close()
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
        ys = greedy_decode(model, src, gold.size(1), bos_id, eos_id, pad_id, use_cache=use_cache)
        pred = torch.full_like(gold, pad_id)
        pred[:, : ys.size(1) - 1] = ys[:, 1:]  # (B, T - 1): drop BOS, pad rows that stopped early
        real = gold != pad_id
        hit = pred == gold
        exact += int((hit | ~real).all(dim=1).sum())
        correct += int((hit & real).sum())
        tokens += int(real.sum())
    return {"exact_match": exact / len(pairs), "token_accuracy": correct / tokens}
