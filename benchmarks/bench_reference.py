"""Forward+backward time of the reference EncoderDecoder vs the same model on nn.Transformer.

Prints the median seconds per training step of each model and the ratios
reference / nn.Transformer, for the default configuration (attention and LayerNorm written
out by hand) and for ``fused_kernels=True`` (PyTorch's fused attention and LayerNorm).
All models run in one process, interleaved repetition by repetition, so that the
machine's load affects them alike.

    python benchmarks/bench_reference.py --reps 30
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from autograder.reference import EncoderDecoder, TransformerConfig, label_smoothed_loss
from autograder.reference.oracles.baseline import TorchTransformer


def step_time(model: torch.nn.Module, src: torch.Tensor, tgt: torch.Tensor, pad_id: int) -> float:
    start = time.perf_counter()
    logits = model(src, tgt[:, :-1])
    label_smoothed_loss(logits, tgt[:, 1:], 0.1, pad_id).backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=30, help="timed repetitions per model (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed repetitions first (default 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="sequences per batch (default 64)")
    parser.add_argument("--src-len", type=int, default=24, help="source length S (default 24)")
    parser.add_argument("--tgt-len", type=int, default=24, help="target length T (default 24)")
    parser.add_argument("--vocab", type=int, default=64, help="vocabulary size V (default 64)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default 0: PyTorch's choice)")
    parser.add_argument("--smoke", action="store_true", help="a few tiny steps in seconds, to test the script")
    args = parser.parse_args()
    if args.smoke:
        args.reps, args.warmup, args.batch_size, args.src_len, args.tgt_len = 2, 1, 4, 6, 6
    if args.threads:
        torch.set_num_threads(args.threads)

    config = TransformerConfig(src_vocab_size=args.vocab, tgt_vocab_size=args.vocab)  # the default sizes
    torch.manual_seed(0)
    models = {
        "reference, default (hand-written)": EncoderDecoder(config),
        "reference, fused_kernels=True": EncoderDecoder(TransformerConfig(**{**vars(config), "fused_kernels": True})),
        "nn.Transformer": TorchTransformer(config),
    }
    g = torch.Generator().manual_seed(0)
    src = torch.randint(3, args.vocab, (args.batch_size, args.src_len), generator=g)
    tgt = torch.randint(3, args.vocab, (args.batch_size, args.tgt_len + 1), generator=g)
    src[::3, -args.src_len // 4 :] = config.pad_id  # some padding, as in real batches
    times: dict[str, list[float]] = {name: [] for name in models}
    for rep in range(args.warmup + args.reps):
        for name, model in models.items():
            t = step_time(model.train(), src, tgt, config.pad_id)
            if rep >= args.warmup:
                times[name].append(t)
    base = statistics.median(times["nn.Transformer"])
    print(
        f"config: d_model={config.d_model} heads={config.num_heads} layers={config.num_layers} "
        f"d_ff={config.d_ff} dropout={config.dropout}; batch {args.batch_size}, S={args.src_len}, "
        f"T={args.tgt_len}, V={args.vocab}; {torch.get_num_threads()} threads; {args.reps} reps"
    )
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:38s} {med * 1e3:8.2f} ms/step   ratio to nn.Transformer {med / base:.3f}")


if __name__ == "__main__":
    main()
