"""Time one training step eager, compiled and captured as a CUDA graph, against nn.Transformer.

One step is chapter 8's: forward, label-smoothed loss, backward, clipping at 1, Adam, the Noam
schedule (dropout 0.1, V = 1000). For each size and precision the script times the course's
model eagerly, compiled (``torch.compile``, inductor; on CUDA with ``mode="reduce-overhead"``) in
each plan of ``captured.COMPILE_PLANS`` it is given (the model alone or the forward pass with the
loss, Adam's foreach loop or its fused kernel), and as one replayed CUDA graph (CUDA only), each
built by ``train.step_function`` as ``python -m autograder train`` builds it; and nn.Transformer's
model eagerly (its step cannot be captured: it synchronizes). It prints each median with its
ratio to nn.Transformer and to the graph. Times are taken after ``synchronize``, so they are the
GPU's time as well as the CPU's.

The cases run in the order ``--cases`` gives, or else the fast ones (eager and graphed, every size
and precision) before the compiled ones (tens of seconds of compiling each), so that a run cut
short keeps the most figures. ``--json`` is rewritten after every case, with the cases not
measured (yet) listed under ``not_measured``, in the layout of ``benchmarks/results/`` that the
appendix renders (the device, the torch version and the date in it).

    python benchmarks/bench_train_step.py --json benchmarks/results/train-step-gpu.json   # on a GPU
    python benchmarks/bench_train_step.py --sizes base --modes eager --reps 3 --threads 2  # a CPU
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
from pathlib import Path

import torch

from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.oracles.baseline import TorchTransformer
from autograder.reference.training import captured
from autograder.reference.training.train import (
    TrainConfig,
    amp_dtype,
    make_optimizer,
    precision_name,
    step_function,
    train_step,
)

# name -> (model sizes, batch B, length S = T): the course's small model and the paper's base model
SIZES = {
    "small": (dict(d_model=64, num_heads=4, num_layers=2, d_ff=128), 64, 24),
    "base": (dict(d_model=512, num_heads=8, num_layers=6, d_ff=2048), 128, 32),
}
VOCAB, PAD = 1000, 0
MODES = ["nn_transformer", "eager", "graphed", "compiled"]
PRECISIONS = {"fp32": None, "bf16": torch.bfloat16}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES), help="model sizes to time")
    p.add_argument(
        "--modes",
        nargs="+",
        choices=["eager", "compiled", "graphed"],
        default=["eager", "compiled", "graphed"],
        help="ways to run the course's step",
    )
    p.add_argument(
        "--plans",
        nargs="+",
        choices=list(captured.COMPILE_PLANS),
        default=[captured.COMPILE_PLAN],
        help="what a compiled step compiles (captured.COMPILE_PLANS)",
    )
    p.add_argument(
        "--amp",
        nargs="+",
        choices=["none", "bf16"],
        default=None,
        help="precisions (default: none and bf16 on CUDA, none elsewhere)",
    )
    p.add_argument(
        "--cases",
        nargs="+",
        default=None,
        metavar="SIZE:PRECISION:MODE[:PLAN]",
        help="the cases to run, in this order (PRECISION fp32 or bf16; MODE nn_transformer, eager, "
        "graphed or compiled), instead of those --sizes, --amp, --modes and --plans make",
    )
    p.add_argument("--backend", default="inductor", help="torch.compile's backend (aot_eager: no code generated)")
    p.add_argument(
        "--reps",
        type=int,
        default=None,
        help="timed steps per case, the median reported (default: 20 on CUDA, 3 elsewhere)",
    )
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (a graph is captured in them)")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's choice)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument("--json", type=Path, default=None, help="write the figures here (after every case)")
    p.add_argument("--smoke", action="store_true", help="a tiny model and a few steps, in seconds, to test the script")
    return p.parse_args(argv)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _step_function(mode: str, plan: str | None, cfg: TransformerConfig, device: torch.device, dtype, backend: str):
    """One step as the training command takes it (``step_function``); nn.Transformer's eagerly."""
    torch.manual_seed(0)
    model = (TorchTransformer if mode == "nn_transformer" else EncoderDecoder)(cfg).to(device)
    recipe = TrainConfig(
        warmup=400, compile=backend if mode == "compiled" else None, compile_plan=plan, cuda_graph=mode == "graphed"
    )
    optimizer, scheduler = make_optimizer(model, recipe)
    if mode == "nn_transformer":
        autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else None
        return lambda src, tgt: train_step(model, src, tgt, optimizer, scheduler, 0.1, PAD, autocast=autocast)
    if mode == "compiled":
        torch._dynamo.reset()  # each case compiles afresh (and stays under dynamo's limit of recompilations)
    return step_function(model, recipe, device, optimizer, scheduler, None, dtype, PAD)


def time_case(
    mode: str, plan: str | None, cfg: TransformerConfig, batch: tuple, device, dtype, args
) -> tuple[float, float]:
    """Median milliseconds of one synchronized step, and the seconds its warm-up steps took."""
    step = _step_function(mode, plan, cfg, device, dtype, args.backend)
    times = []
    _sync(device)
    begin = time.perf_counter()
    for rep in range(args.warmup + args.reps):
        _sync(device)
        start = time.perf_counter()
        step(*batch)
        _sync(device)
        if rep == args.warmup - 1:
            warm = time.perf_counter() - begin
        if rep >= args.warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, warm


def default_cases(args: argparse.Namespace, precisions: list[str]) -> list[str]:
    """nn.Transformer, eager and graphed for every size and precision, then each compile plan."""
    fast = [m for m in ("eager", "graphed") if m in args.modes]
    cases = [f"{s}:{p}:{m}" for s in args.sizes for p in precisions for m in ["nn_transformer", *fast]]
    if "compiled" in args.modes:
        cases += [f"{s}:{p}:compiled:{plan}" for plan in args.plans for s in args.sizes for p in precisions]
    return cases


def parse_case(case: str) -> tuple[str, str, str, str | None]:
    """``"base:bf16:compiled:loss"`` -> ``("base", "bf16", "compiled", "loss")``; refuses a wrong name."""
    parts: list[str | None] = [*case.split(":"), None][:4] if case.count(":") in (2, 3) else [""] * 4
    size, precision, mode, plan = parts
    if (
        size not in SIZES
        or precision not in PRECISIONS
        or mode not in MODES
        or (mode == "compiled") != (plan is not None)
        or (plan is not None and plan not in captured.COMPILE_PLANS)
    ):
        raise SystemExit(
            f"bench_train_step.py: not a case: {case!r} (SIZE:PRECISION:MODE[:PLAN]; sizes "
            f"{', '.join(SIZES)}; precisions {', '.join(PRECISIONS)}; modes {', '.join(MODES)}; "
            f"a plan, one of {', '.join(captured.COMPILE_PLANS)}, for compiled only)"
        )
    return str(size), str(precision), str(mode), plan


def label_of(size: str) -> str:
    dims, batch_size, length = SIZES[size]
    return f"{size} d{dims['d_model']} L{dims['num_layers']} B{batch_size} S{length}"


def auto_picks(device: torch.device, sizes: list[str]) -> dict[str, str]:
    """What ``--amp auto`` picks on this device for each size, eager and captured (compiled or graphed)."""
    return {
        f"{size} {way}": precision_name(
            amp_dtype(device, "auto", d_model=SIZES[size][0]["d_model"], captured=way == "captured")
        )
        for size in sizes
        for way in ("eager", "captured")
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    amps = args.amp or (["none", "bf16"] if device.type == "cuda" else ["none"])
    args.reps = args.reps or (20 if device.type == "cuda" else 3)  # a base-size step takes seconds on a CPU
    if args.smoke:
        SIZES["small"] = (dict(d_model=16, num_heads=2, num_layers=1, d_ff=32), 4, 6)
        args.sizes, args.reps, args.warmup, amps, args.threads = ["small"], 2, 1, ["none"], 1
        if device.type != "cuda":
            args.backend = "aot_eager"  # inductor compiles C++ for tens of seconds
    if args.threads:
        torch.set_num_threads(args.threads)
    precisions = [precision_name(torch.bfloat16 if a == "bf16" else None) for a in amps]
    cases = [parse_case(c) for c in (args.cases or default_cases(args, precisions))]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.processor() or 'cpu'})"
    print(
        f"device {name}, {torch.get_num_threads()} CPU threads; torch {torch.__version__}; "
        f"median of {args.reps} steps after {args.warmup}; compile backend {args.backend}"
    )
    command = "python benchmarks/bench_train_step.py " + " ".join(sys.argv[1:] if argv is None else argv)
    results: dict = {}
    first_steps: dict = {}
    left = [":".join(p for p in case if p) for case in cases]
    sizes_seen = sorted({case[0] for case in cases}, key=list(SIZES).index)

    def write() -> None:
        if args.json is None:
            return
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "what": command,
                    "device": name,
                    "software": f"torch {torch.__version__}, CUDA {torch.version.cuda or 'none'}, "
                    f"Python {platform.python_version()}",
                    "date": datetime.date.today().isoformat(),
                    "threads": torch.get_num_threads(),
                    "load_average_1min": round(os.getloadavg()[0], 2),  # other jobs on the machine slow every figure
                    "note": (
                        f"one training step (forward, label-smoothed loss, backward, clip at 1, Adam, Noam schedule), "
                        f"V={VOCAB}, dropout 0.1, median ms of {args.reps} synchronized steps after {args.warmup}; "
                        "eager and compiled steps built by train.step_function as `python -m autograder train` "
                        "builds them; graph = captured.GraphedStep (--cuda-graph); compiled: one entry per plan of "
                        f"captured.COMPILE_PLANS, backend {args.backend}, on CUDA mode reduce-overhead"
                    ),
                    "compile_plans": {k: vars(v) for k, v in captured.COMPILE_PLANS.items()},
                    "compile_default": captured.COMPILE_PLAN,
                    "amp_auto": auto_picks(device, sizes_seen),
                    "planned": [":".join(p for p in case if p) for case in cases],  # any other case was not measured
                    "step_ms": results,
                    "compile_first_steps_s": first_steps,
                    "not_measured": {
                        case: "not reached: the run stopped (time limit) or has not got there yet" for case in left
                    },
                },
                indent=1,
            )
            + "\n"
        )

    write()
    for size, precision, mode, plan in cases:
        dims, batch_size, length = SIZES[size]
        cfg = TransformerConfig(VOCAB, VOCAB, **dims, dropout=0.1, max_len=max(64, length + 1))
        g = torch.Generator().manual_seed(0)
        batch = tuple(torch.randint(3, VOCAB, (batch_size, n), generator=g).to(device) for n in (length, length + 1))
        label, key = label_of(size), ":".join(p for p in (size, precision, mode, plan) if p)
        row = results.setdefault(label, {}).setdefault(precision, {"nn_transformer": {}, "course": {}})
        shown = (
            f"course {mode} {plan}"
            if plan
            else ("nn.Transformer eager" if mode == "nn_transformer" else f"course {mode:8s}")
        )
        if mode == "graphed" and device.type != "cuda":
            print(f"{label} {precision}  {shown} n/a (a CUDA graph needs CUDA)")
            left.remove(key)
            write()
            continue
        ms, warm = time_case(mode, plan, cfg, batch, device, PRECISIONS[precision], args)
        if mode == "nn_transformer":
            row["nn_transformer"]["synced"] = round(ms, 3)
        elif mode == "compiled":
            row["course"].setdefault("compiled", {})[plan] = round(ms, 3)
            first_steps[f"{label} {precision} {plan}"] = round(warm, 1)
        else:
            row["course"]["synced" if mode == "eager" else "graph"] = round(ms, 3)
        base, graph = row["nn_transformer"].get("synced"), row["course"].get("graph")
        ratios = (f"  ratio to nn.Transformer {ms / base:.3f}" if base else "") + (
            f"  ratio to the graph {ms / graph:.2f}" if graph and mode != "graphed" else ""
        )
        print(
            f"{label} {precision}  {shown} {ms:9.2f} ms/step{ratios}"
            + (f"  (first {args.warmup} steps {warm:.1f} s)" if mode == "compiled" else ""),
            flush=True,
        )
        left.remove(key)
        write()
    if args.json is not None:
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
