"""The two layouts of ``make_task("add")`` side by side, on a CPU: the same architecture, recipe,
pairs and steps, one seed each, to see whether how the pairs are written changes what is learnt.

    python benchmarks/add_layouts.py > benchmarks/results/add-layouts-cpu.log
    python benchmarks/add_layouts.py --smoke     # a few steps of each: for the tests, not for numbers

``digits``: a token per digit, the two numbers interleaved (``a0 b0 a1 b1 ...``), so that digit i
of the sum needs source positions 2i and 2i + 1. ``places``: a token per place holding both of its
digits (``a0b0 a1b1 ...``), so that it needs source position i, where it is written itself. Both
are least significant first, with widths of 8 to 16 digits by default: short enough for a CPU, long
enough that the carry matters. The first line says the command, the date, the torch version and
the machine's load; then a line per validation of each layout, and a summary line per layout.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LAYOUTS = ("digits", "places")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--min-digits", type=int, default=8, help="narrowest numbers (default: 8)")
    p.add_argument("--max-digits", type=int, default=16, help="widest numbers (default: 16)")
    p.add_argument("--num-train", type=int, default=50_000, help="training pairs (default: 50000)")
    p.add_argument("--steps", type=int, default=1500, help="optimizer steps of each layout (default: 1500)")
    p.add_argument("--eval-every", type=int, default=250, help="steps between validations (default: 250)")
    p.add_argument("--d-model", type=int, default=64, help="model width (default: 64)")
    p.add_argument("--num-layers", type=int, default=2, help="encoder layers = decoder layers (default: 2)")
    p.add_argument("--batch-size", type=int, default=64, help="pairs per step (default: 64)")
    p.add_argument("--smoke", action="store_true", help="a few steps of a tiny model: for the tests")
    args = p.parse_args(argv)
    if args.smoke:
        args.num_train, args.steps, args.eval_every, args.d_model, args.num_layers = 300, 4, 2, 16, 1
        args.min_digits, args.max_digits, args.batch_size = 2, 4, 8
    return args


def recipe(args: argparse.Namespace):
    """The trainer's settings, the same for both layouts."""
    from autograder.reference.training.train import TrainConfig

    return TrainConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        warmup=400,
        lr_factor=1.0,
        eval_every=args.eval_every,
        eval_size=200,
        progress=False,
        amp="none",
    )


def run(layout: str, args: argparse.Namespace) -> None:
    """Train the model on one layout and print its validations as they come, then its summary."""
    import torch

    from autograder.data import make_task
    from autograder.reference.model import EncoderDecoder, TransformerConfig
    from autograder.reference.training.train import train

    options = dict(min_digits=args.min_digits, max_digits=args.max_digits, layout=layout)
    task = make_task("add", num_train=args.num_train, num_valid=200, num_test=0, seed=0, **options)
    torch.manual_seed(0)
    config = TransformerConfig(
        len(task.src_vocab),
        len(task.tgt_vocab),
        d_model=args.d_model,
        num_heads=4 if args.d_model % 4 == 0 else 1,
        num_layers=args.num_layers,
        d_ff=4 * args.d_model,
        dropout=0.0,
        max_len=max(64, task.max_src_len, task.max_tgt_len),
    )
    example = " ".join(task.src_vocab.decode(task.train[0][0])[:8])
    print(f"{layout}: source vocabulary {len(task.src_vocab)}, longest source {task.max_src_len} ids: {example} ...")
    start, seen = time.perf_counter(), []

    def validated(step: int, metrics: dict) -> None:
        seen.append((step, metrics["exact_match"]))
        print(
            f"{layout:6s} step {step:5d}  loss {metrics['loss']:.3f}  validation exact match "
            f"{metrics['exact_match']:.3f}  ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )

    train(EncoderDecoder(config), task, recipe(args), device="cpu", callback=validated)
    best = max(seen, key=lambda s: s[1]) if seen else (0, 0.0)
    print(
        f"{layout}: best validation exact match {best[1]:.3f} (step {best[0]}) in {args.steps} steps, "
        f"{time.perf_counter() - start:.0f} s",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch

    torch.set_num_threads(1)
    command = shlex.join(["python", "benchmarks/add_layouts.py", *(sys.argv[1:] if argv is None else argv)])
    print(
        f"$ {command}   # {datetime.date.today()}, torch {torch.__version__}, {os.cpu_count()}-core CPU machine, "
        f"Python {platform.python_version()}, one torch thread (load average {os.getloadavg()[0]:.2f} at the start)"
    )
    config = recipe(args)
    print(
        f"widths {args.min_digits} to {args.max_digits} digits, {args.num_train} training pairs; model d{args.d_model} "
        f"L{args.num_layers}, batch {config.batch_size}, {config.steps} steps, Noam warm-up {config.warmup} "
        f"(factor {config.lr_factor}), label smoothing {config.smoothing}; validation: {config.eval_size} pairs"
    )
    for layout in LAYOUTS:
        run(layout, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
