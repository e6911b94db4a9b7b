"""One training recipe: every default of a run of chapter 8's model, in one place.

``TrainRecipe`` holds what ``python -m autograder train`` does when given no flag: the task,
the model's size, the optimizer's schedule, the device and precision, evaluation and
checkpoints. The command's flags, their defaults and their help are made from its fields
(``autograder.cli.train``); ``make train`` runs it with no flag; the appendix prints it; the figures the
course quotes come from runs of it (``benchmarks/results/``).

``TransformerConfig`` and ``TrainConfig`` keep their own defaults (the paper's sizes, which the
checks and old checkpoints rely on): the recipe is the smaller model and shorter run that
trains in a minute or two on a CPU, and it builds those two configs (``model_config``,
``train_config``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from autograder.data import TASK_NAMES, Task
from autograder.reference.model import TransformerConfig
from autograder.reference.training.train import AMP_MODES, AUTO_LOW_PRECISION_MIN_D_MODEL, TrainConfig

__all__ = [
    "KEPT",
    "OPTIMIZATION_FIELDS",
    "SAVED",
    "TRAINER_DEFAULTS",
    "TRAIN_RECIPE",
    "TrainRecipe",
]

# With --resume these come from the checkpoint, and a flag that sets one is ignored (with a warning).
SAVED = "saved"
# With --resume the checkpoint's value, unless the flag is given.
KEPT = "kept"


def _field(default: Any, help: str, *, resume: str | None = None, shown: str | None = None, **flag: Any) -> Any:
    """A recipe field: its default, its flag's help (``shown``: the default as the help says it), what
    ``--resume`` does with it, and any other argument of ``add_argument`` (choices, metavar, ...)."""
    return field(default=default, metadata={"help": help, "resume": resume, "shown": shown, "flag": flag})


@dataclass(frozen=True)
class TrainRecipe:
    """A run of the chapter 8 model: the defaults of ``python -m autograder train`` (and ``make train``)."""

    # --- the task (autograder.data.make_task) ---
    task: str = _field(
        "dates", f"task of autograder.data.make_task: {', '.join(TASK_NAMES)}", resume=SAVED, choices=TASK_NAMES
    )
    num_train: int = _field(10_000, "training pairs", resume=SAVED)
    num_valid: int = _field(200, "validation pairs", resume=SAVED)
    num_test: int = _field(500, "held-out test pairs, scored at the end", resume=SAVED)
    data_seed: int = _field(0, "seed that generates the task's pairs", resume=SAVED)
    # --- the model: smaller than TransformerConfig's, so that it trains on a CPU in minutes ---
    d_model: int = _field(64, "model width D", resume=SAVED, metavar="D")
    num_heads: int = _field(4, "attention heads H", resume=SAVED, metavar="H")
    num_layers: int = _field(2, "encoder layers = decoder layers", resume=SAVED)
    d_ff: int = _field(128, "feed-forward width F", resume=SAVED, metavar="F")
    dropout: float = _field(0.0, "dropout probability", resume=SAVED)
    fused: bool = _field(False, "PyTorch's fused attention and LayerNorm kernels (same math, faster)", resume=SAVED)
    # --- the optimization (TrainConfig): a shorter warmup and a lower rate than the paper's ---
    steps: int = _field(400, "optimizer steps in all; a resumed run goes on up to this step")
    batch_size: int = _field(64, "pairs per step in all processes together", resume=SAVED)
    warmup: int = _field(200, "Noam warmup steps", resume=SAVED)
    lr_factor: float = _field(0.5, "multiplier of the Noam schedule", resume=SAVED)
    smoothing: float = _field(0.1, "label smoothing", resume=SAVED)
    clip_norm: float = _field(1.0, "clip the gradient norm to this", resume=SAVED)
    seed: int = _field(0, "seed of the weights, dropout and batch order", resume=SAVED)
    # --- the device and the precision (the appendix's GPU section) ---
    device: str = _field(
        "auto",
        "where to train; auto: with --resume the checkpoint's device type, else cuda, then mps, then cpu",
        choices=["auto", "cpu", "cuda", "mps"],
    )
    amp: str = _field(
        "auto",
        "mixed precision: bf16, fp16 (with a GradScaler), none, or auto = bf16 on CUDA "
        "for a captured step of a model at least "
        f"{AUTO_LOW_PRECISION_MIN_D_MODEL} wide, else float32",
        resume=KEPT,
        shown="with --resume the checkpoint's precision, else auto",
        choices=AMP_MODES,
    )
    compile: str | None = _field(
        None,
        "torch.compile the model, or the model with the loss, as "
        "captured.COMPILE_PLAN says (BACKEND: inductor, the default, or aot_eager); "
        "on CUDA inductor replays its kernels as CUDA graphs",
        shown="eager",
        nargs="?",
        const="inductor",
        metavar="BACKEND",
    )
    cuda_graph: bool = _field(
        False,
        "capture the whole step (forward, loss, backward, clipping, Adam, the "
        "schedule) as a CUDA graph and replay it; batches padded to lengths that are "
        f"multiples of {TrainConfig.bucket} (CUDA, one process, not fp16)",
    )
    # --- evaluation and checkpoints ---
    eval_every: int = _field(100, "steps between validation checks (0: none)")
    eval_size: int = _field(200, "validation pairs per check")
    stop_at: float | None = _field(None, "stop once validation exact match reaches this", shown="never")
    time_limit: float = _field(
        0.0,
        "stop once training has taken this many seconds (validations included), and validate there (0: no limit)",
        metavar="SECONDS",
    )
    save_every: int = _field(0, "steps between checkpoints (0: only at the end)")
    out: Path | None = _field(
        None, "checkpoint file to write", shown="the --resume file, else checkpoints/TASK.pt", metavar="PATH"
    )
    # --- this process ---
    threads: int = _field(0, "torch CPU threads per process (0: torch's choice)")
    progress: bool = _field(True, "a progress bar")

    def task_spec(self) -> dict[str, Any]:
        """``make_task``'s arguments (which a checkpoint stores to rebuild the data)."""
        return dict(
            name=self.task,
            num_train=self.num_train,
            num_valid=self.num_valid,
            num_test=self.num_test,
            seed=self.data_seed,
        )

    def model_config(self, task: Task) -> TransformerConfig:
        """The model's config for ``task``'s vocabularies and lengths."""
        return TransformerConfig(
            len(task.src_vocab),
            len(task.tgt_vocab),
            d_model=self.d_model,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            fused_kernels=self.fused,
            max_len=max(64, _round_up(max(task.max_src_len, task.max_tgt_len), TrainConfig.bucket)),
        )

    def train_config(self) -> TrainConfig:
        """The trainer's config: each of its fields is this recipe's field of the same name, except
        those of ``TRAINER_DEFAULTS``, which keep ``TrainConfig``'s default."""
        return TrainConfig(
            **{f.name: getattr(self, f.name) for f in fields(TrainConfig) if f.name not in TRAINER_DEFAULTS}
        )

    def describe(self, width: int = 96) -> str:
        """The fields as ``name=value``, a few to a line: the recipe as the appendix prints it."""
        items = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))
        return textwrap.fill(items, width, break_long_words=False, break_on_hyphens=False)


def _round_up(length: int, bucket: int) -> int:
    """``length`` rounded up to a multiple of ``bucket``: room for the padding of a compiled or graphed
    step, which pads every batch to lengths that are multiples of ``TrainConfig.bucket``."""
    return -(-length // bucket) * bucket


# The fields of TrainConfig that the recipe has no field for: a run of the recipe keeps TrainConfig's default.
TRAINER_DEFAULTS = ("eval_batch_size", "compile_plan", "bucket")
TRAIN_RECIPE = TrainRecipe()  # the course's run: what `make train` does and what its quoted figures come from
# What a checkpoint's train_config gives a resumed run (the rest of the recipe's SAVED fields: its task and model).
OPTIMIZATION_FIELDS = ("batch_size", "warmup", "lr_factor", "smoothing", "clip_norm", "seed")
