"""Time one training step eager, compiled and captured as a CUDA graph, against nn.Transformer.

One step is chapter 8's: forward, label-smoothed loss, backward, clipping at 1, Adam, the Noam
schedule (dropout 0.1, V = 1000). For each size and precision the script times the course's
model eagerly, compiled (``torch.compile``, inductor; on CUDA with ``mode="reduce-overhead"``)
and as one replayed CUDA graph (``captured.GraphedStep``, CUDA only), and nn.Transformer's model
eagerly (its step cannot be captured: it synchronizes), and prints each median with its ratio to
nn.Transformer. Times are taken after ``synchronize``, so they are the GPU's time as well as the
CPU's. ``--json`` writes the figures in the layout of ``benchmarks/results/`` that the appendix
renders, with the device, the torch version and the date.

    python benchmarks/bench_train_step.py --json benchmarks/results/train_step-cuda.json   # on a GPU
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

from autograder.reference import captured
from autograder.reference.baseline import TorchTransformer
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.train import TrainConfig, make_optimizer, train_step

# name -> (model sizes, batch B, length S = T): the course's small model and the paper's base model
SIZES = {
    "small": (dict(d_model=64, num_heads=4, num_layers=2, d_ff=128), 64, 24),
    "base": (dict(d_model=512, num_heads=8, num_layers=6, d_ff=2048), 128, 32),
}
VOCAB, PAD = 1000, 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES), help="model sizes to time")
    p.add_argument("--modes", nargs="+", choices=["eager", "compiled", "graphed"],
                   default=["eager", "compiled", "graphed"], help="ways to run the course's step")
    p.add_argument("--amp", nargs="+", choices=["none", "bf16"], default=None,
                   help="precisions (default: none and bf16 on CUDA, none elsewhere)")
    p.add_argument("--reps", type=int, default=None,
                   help="timed steps per case, the median reported (default: 20 on CUDA, 3 elsewhere)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (a graph is captured in them)")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's choice)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    p.add_argument("--smoke", action="store_true", help="a tiny model and a few steps, in seconds, to test the script")
    return p.parse_args(argv)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _step_function(kind: str, mode: str, cfg: TransformerConfig, device: torch.device, dtype):
    torch.manual_seed(0)
    model = (TorchTransformer if kind == "nn_transformer" else EncoderDecoder)(cfg).to(device)
    recipe = TrainConfig(warmup=400)
    optimizer, scheduler = make_optimizer(model, recipe)
    if mode == "graphed":
        captured.prepare(optimizer, device)
        return captured.GraphedStep(model, optimizer, scheduler, d_model=cfg.d_model, warmup=recipe.warmup,
                                    factor=1.0, smoothing=0.1, pad_id=PAD, clip_norm=1.0, dtype=dtype, device=device)
    net = captured.compile_model(model, "inductor", device) if mode == "compiled" else model
    autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else None
    return lambda src, tgt: train_step(net, src, tgt, optimizer, scheduler, 0.1, PAD, autocast=autocast)


def time_case(kind: str, mode: str, cfg: TransformerConfig, batch: tuple, device, dtype, args) -> float:
    """Median milliseconds of one synchronized step."""
    step = _step_function(kind, mode, cfg, device, dtype)
    times = []
    for rep in range(args.warmup + args.reps):
        _sync(device)
        start = time.perf_counter()
        step(*batch)
        _sync(device)
        if rep >= args.warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    amps = args.amp or (["none", "bf16"] if device.type == "cuda" else ["none"])
    args.reps = args.reps or (20 if device.type == "cuda" else 3)  # a base-size step takes seconds on a CPU
    if args.smoke:
        SIZES["small"] = (dict(d_model=16, num_heads=2, num_layers=1, d_ff=32), 4, 6)
        args.sizes, args.reps, args.warmup, amps, args.threads = ["small"], 2, 1, ["none"], 1
        args.modes = [m for m in args.modes if m != "compiled"]  # inductor compiles for tens of seconds
    if args.threads:
        torch.set_num_threads(args.threads)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.processor() or 'cpu'})"
    print(f"device {name}, {torch.get_num_threads()} CPU threads; torch {torch.__version__}; "
          f"median of {args.reps} steps")
    results: dict = {}
    for size in args.sizes:
        dims, batch_size, length = SIZES[size]
        cfg = TransformerConfig(VOCAB, VOCAB, **dims, dropout=0.1, max_len=max(64, length + 1))
        g = torch.Generator().manual_seed(0)
        batch = tuple(torch.randint(3, VOCAB, (batch_size, n), generator=g).to(device) for n in (length, length + 1))
        label = f"{size} d{dims['d_model']} L{dims['num_layers']} B{batch_size} S{length}"
        for amp in amps:
            dtype = torch.bfloat16 if amp == "bf16" else None
            precision = "bf16" if dtype else "fp32"
            base = time_case("nn_transformer", "eager", cfg, batch, device, dtype, args)
            row = {"nn_transformer": {"synced": round(base, 2)}, "course": {}}
            print(f"{label} {precision}  nn.Transformer eager {base:9.2f} ms/step  ratio to nn.Transformer 1.000")
            for mode in args.modes:
                if mode == "graphed" and device.type != "cuda":
                    print(f"{label} {precision}  course {mode:8s}  n/a (a CUDA graph needs CUDA)")
                    continue
                ms = time_case("course", mode, cfg, batch, device, dtype, args)
                row["course"][{"eager": "synced", "compiled": "compiled", "graphed": "graph"}[mode]] = round(ms, 2)
                print(f"{label} {precision}  course {mode:8s} {ms:9.2f} ms/step  "
                      f"ratio to nn.Transformer {ms / base:.3f}")
            results.setdefault(label, {})[precision] = row
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "what": "python benchmarks/bench_train_step.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "device": name,
            "software": f"torch {torch.__version__}, Python {platform.python_version()}",
            "date": datetime.date.today().isoformat(), "threads": torch.get_num_threads(),
            "load_average_1min": round(os.getloadavg()[0], 2),  # other jobs on the machine slow every figure
            "step_ms": results}, indent=1) + "\n")
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
