"""Run a training recipe: what ``python -m autograder train`` does (chapter 8, appendix).

Three parts, one function each: set up (the device, the task and the model, from the recipe
or from a checkpoint, started as a run by ``autograder.reference.train.start_run``, which decides
the precision), train (``train_run``, timed), and report (the held-out test exact match of the
best validated weights, on rank 0 only).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from autograder.data import make_task
from autograder.reference import checkpoint, distributed
from autograder.reference.device import best_device
from autograder.reference.model import EncoderDecoder
from autograder.reference.recipe import OPTIMIZATION_FIELDS, TrainRecipe
from autograder.reference.train import Run, evaluate, start_run, train_run

__all__ = ["run_recipe"]


def _quiet(*_: Any, **__: Any) -> None:
    """``print`` on every rank but the first."""


def run_recipe(
    recipe: TrainRecipe, *, resume: Path | None = None, ignored: Collection[str] = (), kept: Collection[str] = ()
) -> int:
    """Train as ``recipe`` says, or go on from the checkpoint ``resume``; return the exit status.

    With ``resume`` the checkpoint's task, model and optimization are used: ``ignored`` names the
    recipe fields the command line set that this overrules (a warning lists them); ``kept`` those
    that the command line set and the checkpoint would otherwise give (the precision).
    """
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    state = checkpoint.load(resume) if resume is not None else None
    if recipe.device != "auto":
        device = torch.device(recipe.device)
    else:  # a resume keeps its device type (a warning says when it cannot)
        device = checkpoint.saved_device(state) if state is not None else best_device()
    device = distributed.setup(device)
    main = distributed.is_main()  # asked now: after training's teardown every process is rank 0
    say: Callable[..., None] = print if main else _quiet
    if state is not None and ignored:
        say(
            "with --resume the checkpoint's recipe is used; ignored: "
            + ", ".join(f"--{k.replace('_', '-')}" for k in ignored),
            file=sys.stderr,
        )
    if state is not None:
        recipe = replace(recipe, **{k: state["train_config"][k] for k in OPTIMIZATION_FIELDS})
    if recipe.batch_size < distributed.world_size():
        say(
            f"--batch-size {recipe.batch_size} is smaller than the {distributed.world_size()} processes",
            file=sys.stderr,
        )
        return 2
    run = _set_up(recipe, state, device, amp_given="amp" in kept, resume=resume)
    seconds = _train(run, say)
    if main:  # the checkpoint is the first process's to write and to score
        _report(run, seconds, say)
    return 0


def _set_up(
    recipe: TrainRecipe, state: dict[str, Any] | None, device: torch.device, *, amp_given: bool, resume: Path | None
) -> Run:
    """The task, the model (seeded, or the checkpoint's config) and the trainer's config, started as a
    run (``train.start_run``: the model placed, the precision decided, the checkpoint restored)."""
    spec = dict(state["task"]) if state is not None else recipe.task_spec()
    task = make_task(**spec)
    if state is not None:
        model = EncoderDecoder(checkpoint.model_config(state))
        amp = recipe.amp if amp_given else checkpoint.saved_amp(state) or state["train_config"].get("amp", "auto")
        recipe = replace(recipe, amp=amp)
    else:
        torch.manual_seed(recipe.seed)  # the same initial weights in every process
        model = EncoderDecoder(recipe.model_config(task))
        torch.manual_seed(recipe.seed + 1000 * distributed.rank())  # dropout masks differ between processes
    out = recipe.out or resume or Path("checkpoints") / f"{spec['name']}.pt"
    return start_run(model, task, recipe.train_config(), device, resume=state, out=out, task_spec=spec)


def _train(run: Run, say: Callable[..., None]) -> float:
    """Describe the run, train it, and return the seconds it took (the processes are torn down after)."""
    config, model, device = run.config, run.model, run.device
    say(run.task.describe())
    say(
        f"model: {sum(p.numel() for p in model.parameters()):,} parameters; device {device}; precision "
        f"{run.precision}; batch {config.batch_size} over {distributed.world_size()} process(es); "
        f"{'from step ' + str(run.step) if run.step else 'from scratch'} to step {config.steps}"
    )
    if config.cuda_graph and device.type != "cuda":
        say(f"--cuda-graph: a graph needs CUDA; on {device.type} the same step runs eagerly", file=sys.stderr)
    start = time.perf_counter()
    try:
        train_run(run, callback=_progress)
    finally:
        seconds = time.perf_counter() - start
        distributed.teardown()
    return seconds


def _progress(step: int, metrics: dict) -> None:
    """A validation line above the progress bar."""
    from tqdm import tqdm

    tqdm.write(
        f"step {step:5d}  loss {metrics['loss']:.3f}  validation exact match {metrics['exact_match']:.3f}  "
        f"({metrics['train_seconds']:.1f} s in steps)"
    )


def _report(run: Run, seconds: float, say: Callable[..., None]) -> None:
    """The held-out test exact match of the best validated weights, which the checkpoint keeps
    beside the last state, and where the checkpoint is."""
    assert run.out is not None, "_set_up always names the checkpoint"
    saved_state = checkpoint.load(run.out)
    best = saved_state.get("best")
    model = checkpoint.load_model(saved_state).to(run.device)
    test = evaluate(model, run.task.test, run.task.tgt_vocab, device=run.device)
    which = (
        f"best validated weights, step {best['step']} (validation exact match {best['metrics']['exact_match']:.3f})"
        if best
        else "last weights (never validated)"
    )
    say(
        f"held-out test exact match {test['exact_match']:.1%} (token accuracy {test['token_accuracy']:.1%}) "
        f"on {len(run.task.test)} pairs with the {which}; training took {seconds:.0f} s"
    )
    say(f"checkpoint: {run.out} (--resume goes on from step {saved_state['step']}; load_model gives the best)")
