"""Our model on the Annotated Transformer's copy task: from its recipe to the course's, one change at a time.

The Annotated Transformer (Harvard NLP) ends its first part with a sanity check: copy random
sequences of symbols 1..10 (vocabulary 11, id 0 padding), length 10, whose first symbol is
always 1 and serves as the start symbol; 20 epochs of 20 batches of 80 (400 steps), 2 layers,
Adam (0.9, 0.98, 1e-9) with base rate 0.5 under the warmup schedule (warmup 400, factor 1: a
Noam factor of 0.5 in our terms), no label smoothing. This script generates that task with
its own code and trains OUR EncoderDecoder on it with ``autograder.reference.training.train``'s step,
then greedy-decodes 1,000 fresh sequences per seed. It times only the training steps.

It runs a ladder of configurations (``LADDER``), each one change more than the one before,
over seeds 0, 1, 2:

    post-norm   the Annotated Transformer's recipe (8 heads, factor 0.5, no clipping) in the
                paper's post-norm layers
    pre-norm    the same in pre-norm layers, as the Annotated Transformer's own sublayers are
    heads+rate  the course recipe's heads (``TrainRecipe.num_heads``: 4 of width 16) and Noam
                factor 1.0 (the warmup of 400 never ends in 400 steps)
    course      the course recipe's clipping of the gradient norm (``TrainRecipe.clip_norm``)

What the copy task fixes is the same in every rung: D 64, 2 layers and 400 steps (as in
``TrainRecipe``), batches of 80, warmup 400, no smoothing, dropout 0.1 and F 256 (as the
Annotated Transformer's run below).

``--json`` writes, for each rung and seed, exact match, token accuracy and ms per step (on the
clock, and of the process's CPU time: with one thread, about what the step costs an idle core),
with the machine, the torch version, the date and the load average; the appendix "Training that survives
the real world" renders that file. The Annotated Transformer's own code is not shipped here:
its figures (``EXTERNAL``) were measured once outside this repository, and the file carries them
as a separate, labelled entry, not as figures of this script.

    nice -n 19 python benchmarks/bench_annotated.py --json benchmarks/results/annotated-copy-cpu.json
    python benchmarks/bench_annotated.py --smoke    # seconds: the ladder at the tiniest size
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from autograder.reference.decode import greedy_decode
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.training.recipe import TRAIN_RECIPE
from autograder.reference.training.train import TrainConfig, make_optimizer, train_step

VOCAB, LENGTH, START, PAD = 11, 10, 1, 0  # symbols 1..10; the first of each sequence is 1


@dataclass(frozen=True)
class Rung:
    """One configuration of the ladder: the copy task's fixed recipe and the choices that vary."""

    name: str
    norm_first: bool
    num_heads: int
    lr_factor: float
    clip_norm: float | None  # None: no clipping
    d_model: int = 64
    num_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    steps: int = 400
    batch_size: int = 80
    warmup: int = 400


ANNOTATED = Rung("post-norm", norm_first=False, num_heads=8, lr_factor=0.5, clip_norm=None)
LADDER = [
    ANNOTATED,
    replace(ANNOTATED, name="pre-norm", norm_first=True),
    replace(ANNOTATED, name="heads+rate", norm_first=True, num_heads=TRAIN_RECIPE.num_heads, lr_factor=1.0),
    replace(
        ANNOTATED,
        name="course",
        norm_first=True,
        num_heads=TRAIN_RECIPE.num_heads,
        lr_factor=1.0,
        clip_norm=TRAIN_RECIPE.clip_norm,
    ),
]
# The copy task's sizes are the course recipe's where the recipe sets them.
assert (LADDER[-1].d_model, LADDER[-1].num_layers, LADDER[-1].steps) == (
    TRAIN_RECIPE.d_model,
    TRAIN_RECIPE.num_layers,
    TRAIN_RECIPE.steps,
)

EXTERNAL = {
    "source": "measured once outside this repository, not by this script: the Annotated Transformer's own code "
    "(its model, loss and schedule; not shipped here) on this course's 2-core CPU machine, one thread, "
    "one run after the other with the course's model (the course's figures of that session are beside "
    "it); recorded in this script's docstring and the appendix on 2026-11-23 (commit c96ae67)",
    "config": {
        "d_model": 64,
        "d_ff": 256,
        "num_heads": 8,
        "num_layers": 2,
        "steps": 400,
        "batch_size": 80,
        "warmup": 400,
        "base_rate": 0.5,
        "eval_size": 1000,
    },
    "ms_per_step": 62.6,
    "exact_match": {"0": 0.970, "1": 0.989, "2": 0.893},
    "course_same_session": {"ms_per_step": 43.8, "exact_match": {"0": 0.998, "1": 0.977, "2": 0.994}},
}


def copy_batch(batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """``(B, LENGTH)`` random symbols in 1..VOCAB-1 whose first column is the start symbol."""
    data = torch.randint(1, VOCAB, (batch_size, LENGTH), generator=generator)
    data[:, 0] = START
    return data  # the source and the target are the same sequence


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    a = p.add_argument
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the weights and the batches")
    a(
        "--rungs",
        nargs="+",
        default=[r.name for r in LADDER],
        choices=[r.name for r in LADDER],
        help="the configurations of the ladder to run",
    )
    a(
        "--fused",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fused attention and LayerNorm kernels (--no-fused: the hand-written teaching path)",
    )
    a("--eval-size", type=int, default=1000, help="fresh sequences decoded greedily at the end")
    a("--threads", type=int, default=1, help="torch CPU threads (0: torch's choice; 1 avoids contention)")
    a("--json", type=Path, default=None, help="write the figures here (benchmarks/results/ holds the book's)")
    a("--smoke", action="store_true", help="the ladder at the tiniest size, a few seconds: only checks that it runs")
    args = p.parse_args(argv)
    if args.smoke:
        args.seeds, args.eval_size = args.seeds[:1], 20
    return args


def rungs(args) -> list[Rung]:
    """The rungs to run: the chosen ones, shrunk to the tiniest size for ``--smoke``."""
    chosen = [r for r in LADDER if r.name in args.rungs]
    if args.smoke:
        chosen = [replace(r, steps=10, d_model=16, num_heads=2, d_ff=32) for r in chosen]
    return chosen


def run(rung: Rung, seed: int, fused: bool, eval_size: int) -> dict[str, float]:
    """Train one model from ``seed``; return ms per training step (on the clock, and of this
    process's CPU time, which other jobs on the machine inflate less), exact match and token accuracy."""
    torch.manual_seed(seed)
    model = EncoderDecoder(
        TransformerConfig(
            VOCAB,
            VOCAB,
            d_model=rung.d_model,
            num_heads=rung.num_heads,
            num_layers=rung.num_layers,
            d_ff=rung.d_ff,
            dropout=rung.dropout,
            max_len=LENGTH,
            pad_id=PAD,
            norm_first=rung.norm_first,
            fused_kernels=fused,
        )
    )
    config = TrainConfig(
        steps=rung.steps,
        batch_size=rung.batch_size,
        warmup=rung.warmup,
        lr_factor=rung.lr_factor,
        smoothing=0.0,
        clip_norm=rung.clip_norm,
    )
    optimizer, scheduler = make_optimizer(model, config)
    data = torch.Generator().manual_seed(seed)
    seconds = cpu_seconds = 0.0
    for _ in range(rung.steps):
        batch = copy_batch(rung.batch_size, data)
        start, cpu_start = time.perf_counter(), time.process_time()
        train_step(model, batch, batch, optimizer, scheduler, 0.0, PAD, clip_norm=rung.clip_norm)
        seconds += time.perf_counter() - start
        cpu_seconds += time.process_time() - cpu_start
    test = copy_batch(eval_size, torch.Generator().manual_seed(10_000 + seed))
    out = greedy_decode(model, test, LENGTH - 1, START, eos_id=-1, pad_id=PAD)  # (B, LENGTH): no EOS here
    hit = out == test
    return {
        "ms_per_step": round(1000 * seconds / rung.steps, 2),
        "cpu_ms_per_step": round(1000 * cpu_seconds / rung.steps, 2),
        "exact_match": round(hit.all(dim=1).float().mean().item(), 4),
        "token_accuracy": round(hit[:, 1:].float().mean().item(), 4),
    }


def run_rung(rung: Rung, args) -> dict:
    """Every seed of one rung, printed as it goes; the rung's entry of the JSON."""
    print(
        f"{rung.name}: {'pre' if rung.norm_first else 'post'}-norm, D={rung.d_model}, H={rung.num_heads}, "
        f"F={rung.d_ff}, {rung.num_layers} layers, {rung.steps} steps of {rung.batch_size}, dropout "
        f"{rung.dropout}, warmup {rung.warmup}, factor {rung.lr_factor}, clip {rung.clip_norm}",
        flush=True,
    )
    seeds = {}
    for seed in args.seeds:
        r = seeds[str(seed)] = run(rung, seed, args.fused, args.eval_size)
        print(
            f"seed {seed}: {r['ms_per_step']:6.1f} ms/step  exact match {r['exact_match']:6.1%}  "
            f"token accuracy {r['token_accuracy']:6.1%}\n        {r['cpu_ms_per_step']:6.1f} ms/step of CPU time",
            flush=True,
        )
    ms = statistics.mean(r["ms_per_step"] for r in seeds.values())
    em = statistics.mean(r["exact_match"] for r in seeds.values())
    print(f"mean of {len(seeds)} seed(s): {ms:.1f} ms/step, exact match {em:.1%} ({rung.name})", flush=True)
    return {"config": asdict(rung), "seeds": seeds}


def machine() -> str:
    """The machine in words: its cores and its CPU's model name, where Linux says it."""
    cpuinfo = Path("/proc/cpuinfo")
    names = (
        [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        if cpuinfo.is_file()
        else []
    )
    return f"{os.cpu_count()}-core CPU machine" + (f" ({names[0]})" if names else f" ({platform.machine()})")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    load = os.getloadavg()[0]
    path = "fused kernels" if args.fused else "hand-written math"
    print(
        f"copy task of the Annotated Transformer: vocabulary {VOCAB}, length {LENGTH}; seeds {args.seeds}; "
        f"{path}" + (" (smoke: tiniest size)" if args.smoke else "")
    )
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {machine()}, load average {load:.2f}")
    results = {rung.name: run_rung(rung, args) for rung in rungs(args)}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "what": "python benchmarks/bench_annotated.py " + " ".join(sys.argv[1:] if argv is None else argv),
                    "device": machine(),
                    "torch": torch.__version__,
                    "python": platform.python_version(),
                    "date": datetime.date.today().isoformat(),
                    "threads": torch.get_num_threads(),
                    "fused": args.fused,
                    "eval_size": args.eval_size,
                    "smoke": args.smoke,
                    "load_average_1min": {"start": round(load, 2), "end": round(os.getloadavg()[0], 2)},
                    "rungs": results,
                    "external": EXTERNAL,
                },
                indent=1,
            )
            + "\n"
        )
        print(f"written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
