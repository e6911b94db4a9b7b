"""Seconds and steps to 99% held-out exact match: our EncoderDecoder vs nn.Transformer.

Both models get the same task, sizes, initialisation scheme, seed, batches and recipe
(``autograder.reference.training.train``); only the layers differ (ours written out by hand,
PyTorch's ``nn.Transformer`` in ``TorchTransformer``). Every ``--eval-every`` steps the
first ``--eval-size`` validation pairs are decoded greedily; the time and steps to the
first evaluation that reaches ``--target`` are recorded, and training goes on to
``--stop-at``. The models train in lockstep (one step each in turn) with the same
optimizer, schedule and batches as ``train``, so that both see the same machine load.
The time counted is time spent in training steps (evaluation excluded: it is the same
work for both); the exact match on the test split is reported at the end. By default
the nn.Transformer model starts from our model's initial weights, so the two differ only
in how their layers compute (and in float rounding).

    python benchmarks/time_to_accuracy.py            # defaults: dates task, one CPU thread
    python benchmarks/time_to_accuracy.py --help
    python benchmarks/time_to_accuracy.py --smoke    # a tiny model, a few steps: a test that it runs
"""

from __future__ import annotations

import argparse
import copy
import sys
import time

import torch

from autograder.data import make_task
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.oracles.baseline import TorchTransformer
from autograder.reference.training.train import TrainConfig, evaluate, make_optimizer, train_step, training_batches

MODELS = {"ours": EncoderDecoder, "pytorch": TorchTransformer}

# --smoke: the defaults of the smallest run that still prints every line (target 0, so both
# models reach it at the first evaluation); flags given with --smoke still win.
SMOKE = dict(
    num_train=256,
    num_valid=16,
    num_test=16,
    d_model=16,
    num_heads=2,
    num_layers=1,
    d_ff=32,
    steps=4,
    batch_size=16,
    warmup=2,
    eval_every=2,
    eval_size=16,
    target=0.0,
    stop_at=0.0,
)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    a = p.add_argument
    a("--task", default="dates", help="task from autograder.data.make_task")
    a("--num-train", type=int, default=20_000, help="training pairs")
    a("--num-valid", type=int, default=500, help="validation pairs")
    a("--num-test", type=int, default=1000, help="test pairs (scored once, at the end)")
    a("--seed", type=int, default=0, help="seed of the data, the weights and the batch order")
    a("--d-model", type=int, default=64, help="model width D")
    a("--num-heads", type=int, default=4, help="attention heads H")
    a("--num-layers", type=int, default=2, help="encoder layers = decoder layers")
    a("--d-ff", type=int, default=128, help="inner width F of the feed-forward layers")
    a("--dropout", type=float, default=0.0, help="dropout (this task has ample fresh data)")
    a(
        "--fused",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="our model with fused_kernels=True (F.scaled_dot_product_attention, F.layer_norm); "
        "--no-fused times the hand-written teaching path",
    )
    a("--steps", type=int, default=3000, help="most optimizer steps per model")
    a("--batch-size", type=int, default=64, help="pairs per step")
    a("--warmup", type=int, default=100, help="Noam warmup steps")
    a("--lr-factor", type=float, default=0.2, help="multiplier of the Noam schedule")
    a("--smoothing", type=float, default=0.1, help="label smoothing")
    a("--clip-norm", type=float, default=1.0, help="gradient norm clipping")
    a("--eval-every", type=int, default=25, help="steps between validation checks")
    a("--eval-size", type=int, default=500, help="validation pairs per check")
    a("--target", type=float, default=0.99, help="validation exact match to reach (the time is taken here)")
    a(
        "--stop-at",
        type=float,
        default=0.995,
        help="validation exact match at which training stops (>= target: a margin for the test split)",
    )
    a(
        "--same-init",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start nn.Transformer from our model's initial weights (same function at step 0)",
    )
    a("--budget", type=float, default=120.0, help="seconds allowed to reach the target (pass/fail)")
    a("--threads", type=int, default=1, help="torch CPU threads (torch.set_num_threads)")
    a("--device", default="cpu", help="cpu, cuda or mps")
    a("--models", nargs="+", choices=list(MODELS), default=list(MODELS), help="which models to run")
    a(
        "--smoke",
        action="store_true",
        help="a tiny model for a few steps with target 0 (SMOKE): for the tests, not for numbers",
    )
    args = p.parse_args(argv)
    if args.smoke:
        p.set_defaults(**SMOKE)
        args = p.parse_args(argv)
    return args


def build(name: str, config: TransformerConfig, args) -> torch.nn.Module:
    torch.manual_seed(args.seed)
    model = MODELS[name](config)
    if name == "pytorch" and args.same_init:
        torch.manual_seed(args.seed)
        model.load_reference_weights(EncoderDecoder(config))
    return model


def race(task, args, device) -> list[dict]:
    """Train the models in lockstep, one step each in turn (alternating who goes first),
    so that both see the same machine load; time only the training steps."""
    recipe = TrainConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        warmup=args.warmup,
        lr_factor=args.lr_factor,
        smoothing=args.smoothing,
        clip_norm=args.clip_norm,
        seed=args.seed,
        amp=False,
    )
    runs = []
    for name in args.models:
        config = TransformerConfig(
            len(task.src_vocab),
            len(task.tgt_vocab),
            d_model=args.d_model,
            num_heads=args.num_heads,
            num_layers=args.num_layers,
            d_ff=args.d_ff,
            dropout=args.dropout,
            max_len=64,
            fused_kernels=args.fused and name == "ours",
        )
        model = build(name, config, args).to(device)
        optimizer, scheduler = make_optimizer(model, recipe)
        runs.append(
            dict(
                model=name,
                net=model,
                opt=optimizer,
                sched=scheduler,
                data=training_batches(task, recipe),
                seconds=0.0,
                steps=0,
                steps_to=None,
                seconds_to=None,
                valid=0.0,
                done=False,
            )
        )
    valid = task.valid[: args.eval_size]
    pad = task.tgt_vocab.pad_id
    for r in runs:  # one-off start-up costs (lazy imports, allocator) must count for neither model
        spare = copy.deepcopy(r["net"])
        opt = torch.optim.Adam(spare.parameters(), lr=0.0, foreach=True)
        for _ in range(3):
            train_step(
                spare, *(x.to(device) for x in next(training_batches(task, recipe))), opt, None, recipe.smoothing, pad
            )
    for step in range(1, args.steps + 1):
        order = runs if step % 2 else runs[::-1]
        for r in order:
            if r["done"]:
                continue
            src, tgt = (x.to(device) for x in next(r["data"]))
            start = time.perf_counter()
            loss = train_step(
                r["net"], src, tgt, r["opt"], r["sched"], recipe.smoothing, pad, clip_norm=recipe.clip_norm
            )
            r["seconds"] += time.perf_counter() - start
            r["steps"] = step
            if step % args.eval_every == 0 or step == args.steps:
                r["valid"] = evaluate(r["net"], valid, task.tgt_vocab, device=device)["exact_match"]
                if r["steps_to"] is None and r["valid"] >= args.target:
                    r["steps_to"], r["seconds_to"] = step, r["seconds"]
                r["done"] = r["valid"] >= max(args.stop_at, args.target)
                print(
                    f"  {r['model']:8s} step {step:5d}  loss {loss:.3f}  valid exact match "
                    f"{r['valid']:.3f}  train {r['seconds']:6.1f} s",
                    flush=True,
                )
        if all(r["done"] for r in runs):
            break
    for r in runs:
        r["test"] = evaluate(r["net"], task.test, task.tgt_vocab, device=device)["exact_match"]
        r["params"] = sum(p.numel() for p in r["net"].parameters())
    return runs


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    task = make_task(
        args.task, num_train=args.num_train, num_valid=args.num_valid, num_test=args.num_test, seed=args.seed
    )
    print(task.describe())
    print(f"torch {torch.__version__}, {args.threads} thread(s), device {device}")
    results = race(task, args, device)
    print(
        f"\n{'model':8s} {'params':>8s} {'steps':>6s} {'seconds':>8s} {'ms/step':>8s} {'test EM':>8s}"
        f"   (steps and seconds to {args.target:.1%} validation exact match)"
    )
    ok = True
    for r in results:
        steps = r["steps_to"] if r["steps_to"] is not None else "-"
        secs = f"{r['seconds_to']:.1f}" if r["seconds_to"] is not None else "-"
        per_step = 1000 * r["seconds_to"] / r["steps_to"] if r["steps_to"] else float("nan")
        print(f"{r['model']:8s} {r['params']:8d} {steps!s:>6s} {secs:>8s} {per_step:8.1f} {r['test']:8.3f}")
        reached = r["seconds_to"] is not None and r["seconds_to"] <= args.budget
        ok &= reached and r["test"] >= args.target
        if not reached:
            print(
                f"  {r['model']}: did not reach {args.target:.0%} validation exact match within "
                f"{args.budget:.0f} s of training"
            )
    if len(results) == 2 and all(r["seconds_to"] is not None for r in results):
        ours, theirs = results if results[0]["model"] == "ours" else results[::-1]
        print(
            f"\nratio ours/PyTorch: time {ours['seconds_to'] / theirs['seconds_to']:.2f}, "
            f"steps {ours['steps_to'] / theirs['steps_to']:.2f}, "
            f"time per step {ours['seconds'] / ours['steps'] / (theirs['seconds'] / theirs['steps']):.2f} "
            "(steps to the target differ only through float rounding when --same-init)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
