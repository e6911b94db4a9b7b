"""Checkpoints that resume exactly: one file that ``torch.load`` opens (chapter 8; the appendix
"Training that survives the real world").

A run resumed from step n must take the same steps as a run that never stopped. Besides the
weights that takes everything that decides the next step: Adam's two moment estimates and
step count (in the optimizer's state), the scheduler's step, a GradScaler's scale, where the
batch stream is (its generator's state at the start of the epoch and how many batches were
taken since), and the random number generators that draw dropout masks. The model's and the
recipe's configs make the file self-contained: ``load_model(path)`` rebuilds the model from it
alone. The file also records the device type and the precision the run used (a resume keeps them,
since only the same arithmetic repeats a run exactly), and keeps the best validated weights and
their step beside the last state: ``--resume`` goes on from the last state, while evaluation and
decoding load the best weights. Everything in it is a tensor, a number, a string, a list or a dict, so
``torch.load(path, weights_only=True)`` opens it without running any pickled code.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from autograder.reference.model import EncoderDecoder, TransformerConfig

FORMAT = "autograder-train/1"
AMP_OF_PRECISION = {"fp32": "none", "bf16": "bf16", "fp16": "fp16"}  # the amp mode that keeps a precision


def rng_state() -> dict[str, Any]:
    """The states of the generators that training draws from: the CPU's, and every GPU's."""
    state: dict[str, Any] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def snapshot(
    *,
    step: int,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    scaler: Any,
    data: dict[str, Any],
    rng: list[dict[str, Any]],
    train_config: Any,
    history: list[float],
    task: dict[str, Any] | None = None,
    metrics: dict[str, float] | None = None,
    device_type: str | None = None,
    precision: str | None = None,
    best: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything that decides the next step, as a dict of plain values and tensors.

    Args:
        step: optimizer steps taken so far.
        model: the bare model (not its DistributedDataParallel wrapper); its ``config`` is saved.
        optimizer, scheduler, scaler: their ``state_dict()`` is saved (scaler may be None).
        data: the batch stream's ``state_dict()``.
        rng: ``rng_state()`` of every rank, in rank order.
        train_config: the recipe (a dataclass), saved as a dict.
        history: the loss of every step so far; task: how to regenerate the data
            (``make_task``'s arguments); metrics: the last evaluation.
        device_type, precision: what the steps ran on and in (``"cuda"``, ``"fp32"``, ...).
        best: ``best_weights`` of the best validation so far (None: never evaluated).
    """
    return {
        "format": FORMAT,
        "step": step,
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "model_config": asdict(model.config),  # type: ignore[call-overload]
        "optimizer": _portable(optimizer.state_dict()),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "scaler": scaler.state_dict() if scaler is not None else None,
        "data": data,
        "rng": rng,
        "train_config": asdict(train_config),
        "task": task,
        "history": list(history),
        "metrics": metrics,
        "torch_version": str(torch.__version__),
        "device_type": device_type,
        "precision": precision,
        "best": best,
    }


def _portable(state: dict[str, Any]) -> dict[str, Any]:
    """An optimizer state that any Adam can load: a CUDA graph's tensor learning rate becomes a
    number again and ``capturable`` is dropped (``captured.prepare`` sets both back)."""
    groups = [{**g, "lr": float(g["lr"]), "capturable": False} for g in state["param_groups"]]
    return {**state, "param_groups": groups}


def best_weights(step: int, model: nn.Module, metrics: dict[str, float]) -> dict[str, Any]:
    """A copy of ``model``'s weights (on the CPU) with the step and the validation that chose them."""
    weights: dict[str, Tensor] = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
    return {"step": step, "metrics": dict(metrics), "model": weights}


def saved_device(state: dict[str, Any]) -> torch.device:
    """The device type the checkpoint trained on when this machine has one, else ``best_device()``."""
    from autograder.reference.device import best_device

    kind = state.get("device_type")
    here = {
        "cpu": True,
        "cuda": torch.cuda.is_available(),
        "mps": getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available(),
    }
    return torch.device(kind) if kind is not None and here.get(kind, False) else best_device()


def saved_amp(state: dict[str, Any]) -> str | None:
    """The amp mode that keeps the checkpoint's precision (None: a checkpoint that did not record it)."""
    return AMP_OF_PRECISION.get(state.get("precision") or "")


def warn_if_changed(state: dict[str, Any], device_type: str, precision: str) -> list[str]:
    """Warn (and return the lines) when a resume runs on another device type or in another precision
    than the checkpoint's: the run goes on, but no longer repeats an uninterrupted one exactly."""
    changes = [
        f"{what} {old} -> {new}"
        for what, old, new in (
            ("device", state.get("device_type"), device_type),
            ("precision", state.get("precision"), precision),
        )
        if old is not None and old != new
    ]
    if changes:
        warnings.warn(
            f"resuming with {' and '.join(changes)} (the checkpoint's were kept unless asked): the "
            "steps from here on will not repeat an uninterrupted run exactly",
            stacklevel=3,
        )
    return changes


def save(state: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write ``state`` to ``path`` atomically: a crash mid-write leaves the previous file whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # a rename: the old file or the new one, never half of each
    return path


def load(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Open a checkpoint written by ``save`` (``weights_only``: no pickled code runs)."""
    state = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path} is not a training checkpoint of this course (format {found!r}, expected {FORMAT!r})")
    return state


def model_config(state: dict[str, Any]) -> TransformerConfig:
    """The ``TransformerConfig`` saved in a checkpoint (fields this version lacks are left out)."""
    known = {f.name for f in fields(TransformerConfig)}
    return TransformerConfig(**{k: v for k, v in state["model_config"].items() if k in known})


def load_model(path_or_state: str | os.PathLike | dict[str, Any], which: str = "best") -> EncoderDecoder:
    """Rebuild the trained model from a checkpoint file (or a loaded checkpoint) alone.

    ``which="best"``: the best validated weights (the last ones when the run never evaluated);
    ``"last"``: the weights that ``--resume`` goes on from.

    Example:
        >>> model = load_model("checkpoints/dates.pt").eval()  # doctest: +SKIP
    """
    state = path_or_state if isinstance(path_or_state, dict) else load(path_or_state)
    if which not in ("best", "last"):
        raise ValueError(f"which must be 'best' or 'last', got {which!r}")
    model = EncoderDecoder(model_config(state))
    best = state.get("best")
    model.load_state_dict(best["model"] if which == "best" and best is not None else state["model"])
    return model


def restore(
    state: dict[str, Any],
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    scaler: Any,
    data: Any,
    rank: int = 0,
    world_size: int = 1,
) -> int:
    """Load ``state`` into a freshly built model, optimizer, scheduler, scaler and batch stream,
    and restore this rank's random generators; return the step to go on from.

    With a different number of processes than the run that saved it, each rank's generator
    cannot be matched: the CPU generator is then seeded from the step and the rank (a warning
    says so), which only matters with dropout.
    """
    model.load_state_dict(state["model"])
    kinds = [{k: g.get(k) for k in ("foreach", "fused")} for g in optimizer.param_groups]
    optimizer.load_state_dict(state["optimizer"])
    for group, kind in zip(optimizer.param_groups, kinds, strict=True):
        group.update(kind)  # Adam's implementation (foreach loop or fused kernel) is this run's, not the file's
    if scheduler is not None and state["scheduler"] is not None:
        scheduler.load_state_dict(state["scheduler"])
    if scaler is not None and state["scaler"] is not None:
        scaler.load_state_dict(state["scaler"])
    data.load_state_dict(state["data"])
    if len(state["rng"]) == world_size:
        set_rng_state(state["rng"][rank])
    else:
        warnings.warn(
            f"checkpoint saved by {len(state['rng'])} process(es), resumed by {world_size}: "
            "dropout masks will differ from an uninterrupted run",
            stacklevel=2,
        )
        torch.manual_seed(1_000_003 * int(state["step"]) + rank)
    return int(state["step"])
