"""A captured training step: the model compiled (``torch.compile``), or the whole step replayed as
one CUDA graph (the appendix "Training that survives the real world").

What ``--compile`` compiles is a plan (``COMPILE_PLANS``): the model alone, or the forward pass
and the loss as one function, each with Adam's ``foreach`` loop or its fused kernel, and the
model's attention and LayerNorm hand-written or PyTorch's fused kernels.

Shape letters: B batch, S source length, T target length, V vocabulary.

An eager step of the course's models on a GPU is bound by the CPU: Python and PyTorch launch
hundreds of small kernels one after the other, and the GPU waits for each launch. Capturing the
step records those launches once; a replay then hands the GPU the whole step in one call. A
CUDA graph replays fixed memory addresses, so everything the step touches must stay in place:
the batch is copied into static tensors (padded to a bucket shape, one graph per shape), Adam
keeps its step count on the device (``capturable=True``), and the learning rate is a tensor on
the device that the graph reads, filled before each step from chapter 8's scheduler (the one
schedule, which the eager step follows too). ``nn.Transformer``'s step cannot be captured: it
synchronizes with the CPU on the way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from autograder.reference.loss import label_smoothed_loss

WARMUP_STEPS = 3  # eager steps of a shape before its capture: lazy set-up (cuBLAS, Adam's state) stays out


@dataclass(frozen=True)
class CompilePlan:
    """What ``--compile`` hands to ``torch.compile``, and which Adam steps after it.

    Attributes:
        whole_loss: compile the forward pass and the label-smoothed loss as one function (its
            backward is compiled with it); False: only the model, the loss stays eager.
        fused_adam: Adam's fused kernel (``fused=True``: every parameter updated in a few launches)
            instead of its ``foreach`` loop. The same arithmetic, up to rounding.
        fused_kernels: switch the model to PyTorch's fused attention and LayerNorm first
            (``fused.fuse``, in place: the same weights and function, as ``--fused`` builds it).
    """

    whole_loss: bool
    fused_adam: bool
    fused_kernels: bool = False


# The candidates for what ``--compile`` does, each measured by benchmarks/bench_train_step.py
# (``--plans``) and each equal to the eager step on the CPU (tests/reference/training/test_train_captured.py).
COMPILE_PLANS = {
    "model": CompilePlan(whole_loss=False, fused_adam=False),
    "model+fused-adam": CompilePlan(whole_loss=False, fused_adam=True),
    "loss": CompilePlan(whole_loss=True, fused_adam=False),
    "loss+fused-adam": CompilePlan(whole_loss=True, fused_adam=True),
    "loss+fused-adam+fused-kernels": CompilePlan(whole_loss=True, fused_adam=True, fused_kernels=True),
}
# What ``--compile`` runs when the config names no plan: the fastest measured on a GPU
# (benchmarks/results/train-step-gpu.json, an H200: the forward pass with the loss compiled
# as one function, and Adam's fused kernel, 5.75 ms a small step where the model alone took 9.24).
COMPILE_PLAN = "loss+fused-adam"


def compile_plan(name: str | None) -> CompilePlan:
    """The plan called ``name`` (None: ``COMPILE_PLAN``); an unknown name is refused with the choices."""
    key = COMPILE_PLAN if name is None else name
    if key not in COMPILE_PLANS:
        raise ValueError(f"compile plan must be one of {', '.join(COMPILE_PLANS)}, got {name!r}")
    return COMPILE_PLANS[key]


def _compile(fn: Any, backend: str, device: torch.device) -> Any:
    """``torch.compile`` with static shapes; on CUDA inductor also replays its kernels as CUDA
    graphs (``mode="reduce-overhead"``). ``backend="aot_eager"`` traces forward and backward
    without generating code: what the CPU tests use, since inductor compiles for about 20 s."""
    mode = "reduce-overhead" if device.type == "cuda" and backend == "inductor" else None
    return torch.compile(fn, backend=backend, mode=mode, dynamic=False)


def compile_model(model: nn.Module, backend: str, device: torch.device) -> nn.Module:
    """``torch.compile(model)``: the plan ``"model"`` (see ``_compile`` for ``backend``)."""
    return _compile(model, backend, device)  # type: ignore[no-any-return]


def compile_loss(
    model: nn.Module, backend: str, device: torch.device, *, smoothing: float, pad_id: int, dtype: torch.dtype | None
) -> Callable[[Tensor, Tensor], Tensor]:
    """The forward pass and the loss of ``train_step`` compiled as one function of ``(src, tgt)``
    (the plan ``"loss"``): the loss's kernels fuse with the model's, and on CUDA both passes replay
    as CUDA graphs. Autocast (``dtype``) is entered inside, so it is traced with the rest."""

    def loss_of(src: Tensor, tgt: Tensor) -> Tensor:
        with torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext():
            logits = model(src, tgt[:, :-1])  # (B, T - 1, V)
        return label_smoothed_loss(logits, tgt[:, 1:], smoothing, pad_id)

    return _compile(loss_of, backend, device)  # type: ignore[no-any-return]


def mark_step(device: torch.device) -> None:
    """Tell inductor's CUDA graphs that a new training step begins, so that the outputs of the
    previous replay may be overwritten (it guesses that from the backward pass otherwise)."""
    if device.type == "cuda":
        torch.compiler.cudagraph_mark_step_begin()


def prepare(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Make chapter 8's Adam capturable, in place (also after a checkpoint was loaded into it): its
    learning rate a tensor on ``device`` that a graph can write, its step counts on the device
    (``capturable``, CUDA only; a CPU takes a tensor learning rate only without ``foreach``)."""
    on_cuda = device.type == "cuda"
    for group in optimizer.param_groups:
        group["lr"] = torch.tensor(float(group["lr"]), device=device)
        group["capturable"], group["foreach"], group["fused"] = on_cuda, on_cuda, False
    for state in optimizer.state.values():
        if "step" in state:
            state["step"] = torch.as_tensor(state["step"], dtype=torch.float32).to(device if on_cuda else "cpu")


class GraphedStep:
    """The training step of ``train_step`` (forward, loss, backward, clipping, Adam, the Noam
    schedule) as one CUDA graph per batch shape; on a CPU the same body runs eagerly (tests).

    Args:
        model: the bare model, on ``device``; optimizer: chapter 8's Adam after ``prepare``.
        scheduler: the ``LambdaLR`` of chapter 8 (``noam_scheduler``): its function gives each step's
            learning rate, written into the optimizer's learning-rate tensor before the step, and
            its step count is what a checkpoint saves.
        smoothing, pad_id, clip_norm: as in ``train_step``.
        dtype: the autocast dtype (None: float32; float16 is refused: its GradScaler synchronizes).
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: Any,
        *,
        smoothing: float,
        pad_id: int,
        clip_norm: float | None,
        dtype: torch.dtype | None,
        device: torch.device,
    ) -> None:
        if dtype == torch.float16:
            raise ValueError(
                "a CUDA graph cannot hold float16's GradScaler (it reads the gradients on the CPU): use bf16 or none"
            )
        self.model, self.optimizer, self.scheduler, self.device = model, optimizer, scheduler, device
        self.smoothing, self.pad_id, self.clip_norm, self.dtype = smoothing, pad_id, clip_norm, dtype
        self.lr: Tensor = optimizer.param_groups[0]["lr"]
        self.graphs: dict[tuple[int, ...], tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]] = {}
        self.seen: dict[tuple[int, ...], int] = {}
        # One memory pool for the graphs of every shape: a replay rewrites all it reads (the batch, the
        # gradients, the activations) except what lives outside the pool (weights, Adam's moments, the
        # learning rate), and the loss it returns is read before the next replay, so the graphs can reuse
        # each other's memory; a pool each would hold a step's activations for every bucket shape.
        self.pool: Any = None
        self.capture = device.type == "cuda"

    def _autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        # a graph must not keep autocast's cache of cast weights: the casts have to be replayed too
        return torch.autocast(self.device.type, dtype=self.dtype, cache_enabled=False)

    def _body(self, src: Tensor, tgt: Tensor) -> Tensor:
        """What the graph holds; every tensor it reads or writes stays at its address."""
        with self._autocast():
            logits = self.model(src, tgt[:, :-1])  # (B, T - 1, V)
        loss = label_smoothed_loss(logits, tgt[:, 1:], self.smoothing, self.pad_id)
        loss.backward()
        if self.clip_norm is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm, foreach=self.capture)
        self.optimizer.step()
        return loss.detach()

    def _eager(self, src: Tensor, tgt: Tensor) -> Tensor:
        self.optimizer.zero_grad(set_to_none=True)
        return self._body(src, tgt)

    def __call__(self, src: Tensor, tgt: Tensor) -> float:
        """One optimizer step on a padded batch (``stream.pad_to_bucket``); returns its loss."""
        self.model.train()
        shape = (*src.shape, *tgt.shape)
        self._schedule()
        if not self.capture:
            return self._eager(src, tgt).item()
        if shape in self.graphs:
            graph, static_src, static_tgt, static_loss = self.graphs[shape]
            static_src.copy_(src, non_blocking=True)
            static_tgt.copy_(tgt, non_blocking=True)
            graph.replay()
            return static_loss.item()
        self.seen[shape] = self.seen.get(shape, 0) + 1
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up steps run off the default stream, as capture requires
            loss = self._eager(src, tgt)
        torch.cuda.current_stream().wait_stream(side)
        if self.seen[shape] >= WARMUP_STEPS:
            self._capture(shape, src, tgt)
        return loss.item()

    def _schedule(self) -> None:
        """Write the learning rate of the step about to be taken into the tensor the step reads, and
        count the step: the value chapter 8's scheduler gives the eager step, from its own function."""
        scheduler = self.scheduler
        # LambdaLR: before the n-th step last_epoch is n - 1, and the rate is base * factor * noam_lr(n)
        self.lr.fill_(scheduler.base_lrs[0] * scheduler.lr_lambdas[0](scheduler.last_epoch))
        scheduler.last_epoch += 1  # what a checkpoint saves

    def _capture(self, shape: tuple[int, ...], src: Tensor, tgt: Tensor) -> None:
        """Record the step for ``shape``; recording runs nothing, so no step is taken here."""
        static_src, static_tgt = src.clone(), tgt.clone()
        self.optimizer.zero_grad(set_to_none=True)  # the graph allocates its own gradients
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            static_loss = self._body(static_src, static_tgt)
        self.pool = self.pool or graph.pool()
        self.graphs[shape] = (graph, static_src, static_tgt, static_loss)
