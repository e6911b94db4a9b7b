"""``python -m autograder train``: train chapter 8's model with its recipe (``make train``; chapter 8,
appendix).

The flags, their defaults and their help are made from the fields of
``autograder.reference.training.recipe.TrainRecipe`` (``add_flags``), and note which were given: with
``--resume`` the checkpoint's recipe overrules some of them and keeps others unless given.

The run has three parts, one function each: set up (the device, the task and the model, from the
recipe or from a checkpoint, started as a run by ``autograder.reference.training.train.start_run``, which
decides the precision), train (``train_run``, timed), and report (the held-out test exact match of
the best validated weights, on rank 0 only). torch is imported when the command runs, or when its
flags are made, never when the command line starts for another command.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import Field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from autograder.reference.training.recipe import TrainRecipe
    from autograder.reference.training.train import Run


def add_parser(sub: Any, flags: bool = True) -> None:
    """The train command; ``flags=False`` leaves out the recipe's flags, which import torch to be made."""
    train = sub.add_parser(
        "train",
        help="train the encoder-decoder of chapter 8 and write a checkpoint that resumes exactly",
        description="Train the chapter 8 model with its recipe (autograder.reference.training.recipe), "
        "print the held-out exact match, and write one checkpoint file. Several processes: torchrun --nproc_per_node N "
        "-m autograder train ... (data parallel; each process takes its share of the batch).",
    )
    train.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="PATH",
        help="go on from this checkpoint: model, recipe and data come from it; --steps is the total",
    )
    if flags:
        from autograder.reference.training import recipe

        add_flags(train, recipe.TRAIN_RECIPE)


def run(args: argparse.Namespace) -> int:
    """Run the recipe that the flags describe."""
    from autograder.reference.training import recipe

    return run_recipe(
        from_args(args),
        resume=args.resume,
        ignored=given_flags(args, recipe.SAVED),
        kept=given_flags(args, recipe.KEPT),
    )


# ----------------------------------------------------------------------------- flags


def _flag_type(value: Any) -> Any:
    """The argparse type of a field from its default (None fields: the type their flag reads)."""
    return {bool: None, int: int, float: float, str: str}.get(type(value))


class _Store(argparse.Action):
    """Store the value and note that the flag was given (``given_flags``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, self.value(values, option_string))
        namespace.given_flags = namespace.given_flags | {self.dest}

    def value(self, values: Any, option_string: str | None) -> Any:
        """What the flag sets: the value it was given."""
        return values


class _Switch(_Store, argparse.BooleanOptionalAction):
    """``--name`` / ``--no-name``, noting that the flag was given."""

    def value(self, values: Any, option_string: str | None) -> Any:
        """What the flag sets: off for its ``--no-`` form, else on."""
        return not (option_string or "").startswith("--no-")


_FLAG_TYPES = {"stop_at": float, "out": Path}  # fields whose default None says nothing of their type


def _help(f: Field[Any], default: Any) -> str:
    from autograder.reference.training.recipe import KEPT, SAVED

    shown = f.metadata["shown"]
    if shown is None:
        shown = ("on" if default else "off") if isinstance(default, bool) else str(default)
    note = {SAVED: "; with --resume the checkpoint's", KEPT: ""}.get(f.metadata["resume"], "")
    return f"{f.metadata['help']} (default: {shown}{note})".replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser, recipe: TrainRecipe) -> None:
    """One flag for each field of ``recipe`` (``--d-model`` for ``d_model``), defaulting to its value."""
    parser.set_defaults(given_flags=frozenset())
    for f in fields(recipe):
        default = getattr(recipe, f.name)
        name, extra = "--" + f.name.replace("_", "-"), dict(f.metadata["flag"])
        if isinstance(default, bool):
            parser.add_argument(name, action=_Switch, default=default, help=_help(f, default), **extra)
            continue
        kind = _FLAG_TYPES.get(f.name) or _flag_type(default)
        if kind is not None and "choices" not in extra:
            extra["type"] = kind
        parser.add_argument(name, action=_Store, default=default, help=_help(f, default), **extra)


def from_args(args: argparse.Namespace) -> TrainRecipe:
    """The recipe that parsed flags describe (each unset flag holds its recipe default)."""
    from autograder.reference.training.recipe import TrainRecipe

    return TrainRecipe(**{f.name: getattr(args, f.name) for f in fields(TrainRecipe)})


def given_flags(args: argparse.Namespace, resume: str | None = None) -> list[str]:
    """The recipe fields set on the command line, in the recipe's order; with ``resume``, only
    those whose ``--resume`` behaviour is that (SAVED: ignored; KEPT: kept unless given)."""
    from autograder.reference.training.recipe import TrainRecipe

    given: frozenset[str] = getattr(args, "given_flags", frozenset())
    return [
        f.name for f in fields(TrainRecipe) if f.name in given and (resume is None or f.metadata["resume"] == resume)
    ]


# ----------------------------------------------------------------------------- the run


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
    import torch

    from autograder.reference.device import best_device
    from autograder.reference.training import checkpoint, distributed
    from autograder.reference.training.recipe import OPTIMIZATION_FIELDS

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
    import torch

    from autograder.data import make_task
    from autograder.reference.model import EncoderDecoder
    from autograder.reference.training import checkpoint, distributed
    from autograder.reference.training.train import start_run

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
    from autograder.reference.training import distributed
    from autograder.reference.training.train import train_run

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
    from autograder.reference.training import checkpoint
    from autograder.reference.training.train import evaluate

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
