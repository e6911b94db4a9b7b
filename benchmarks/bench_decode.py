"""Greedy decoding with and without the key/value cache (chapter 8).

Without a cache, step t runs the decoder over the whole prefix of t tokens again, so
producing N tokens costs about N^2 / 2 token-passes; with the cache each step runs the
decoder over the one new token and reads the earlier keys and values, about N
token-passes. This script times both on the same (random, untrained) model for growing
output lengths, checks that they give identical tokens, and prints uncached / cached.

Repetitions are interleaved (every length and both modes in each round) in one process,
so that a slow moment of the machine hits both modes alike; the median is reported.

    python benchmarks/bench_decode.py
    python benchmarks/bench_decode.py --lengths 32 128 512 --device cuda
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from autograder import reference

BOS, PAD = 1, 0
NO_EOS = -1  # an id no token has: every row runs to max_len, so both modes take the same steps


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        default=[16, 32, 64, 128],
        help="output lengths (max_len of greedy_decode) to time",
    )
    p.add_argument("--batch-size", type=int, default=8, help="sentences decoded together")
    p.add_argument("--src-len", type=int, default=16, help="length of every source sentence")
    p.add_argument("--vocab", type=int, default=64, help="source and target vocabulary size")
    p.add_argument("--d-model", type=int, default=128, help="model width D")
    p.add_argument("--num-heads", type=int, default=4, help="attention heads H")
    p.add_argument("--num-layers", type=int, default=2, help="encoder layers = decoder layers")
    p.add_argument("--d-ff", type=int, default=512, help="inner width F of the feed-forward layers")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the median is reported")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads on the CPU")
    p.add_argument("--device", default=None, help="cpu, cuda or mps (default: the best available)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the sources")
    p.add_argument("--smoke", action="store_true", help="tiny model and lengths, in seconds, to test the script")
    return p.parse_args(argv)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def _timed(model, src, max_len: int, use_cache: bool, device: torch.device) -> tuple[float, torch.Tensor]:
    _sync(device)
    start = time.perf_counter()
    out = reference.greedy_decode(model, src, max_len, BOS, NO_EOS, PAD, use_cache=use_cache)
    _sync(device)
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> dict[int, float]:
    args = parse_args(argv)
    if args.smoke:
        args.lengths, args.batch_size, args.src_len, args.repeats = [4, 8], 2, 4, 1
        args.d_model, args.num_heads, args.d_ff = 16, 2, 32
    torch.set_num_threads(args.threads)
    device = torch.device(args.device) if args.device else reference.best_device()
    torch.manual_seed(args.seed)
    config = reference.TransformerConfig(
        src_vocab_size=args.vocab,
        tgt_vocab_size=args.vocab,
        d_model=args.d_model,
        num_heads=args.num_heads,
        num_layers=args.num_layers,
        d_ff=args.d_ff,
        dropout=0.0,
        max_len=max(max(args.lengths) + 1, args.src_len),
    )
    model = reference.EncoderDecoder(config).to(device).eval()
    g = torch.Generator().manual_seed(args.seed)
    src = torch.randint(3, args.vocab, (args.batch_size, args.src_len), generator=g).to(device)

    for length in args.lengths[:1]:  # warm-up: first calls allocate and pick kernels
        _timed(model, src, length, False, device)
        _timed(model, src, length, True, device)
    times: dict[tuple[int, bool], list[float]] = {(n, c): [] for n in args.lengths for c in (False, True)}
    for rep in range(args.repeats):
        for length in args.lengths:
            order = (False, True) if rep % 2 == 0 else (True, False)
            outs = {}
            for use_cache in order:
                seconds, outs[use_cache] = _timed(model, src, length, use_cache, device)
                times[length, use_cache].append(seconds)
            assert torch.equal(outs[False], outs[True]), f"cached and uncached tokens differ at max_len={length}"
            assert outs[True].shape == (args.batch_size, length + 1)

    print(
        f"device {device}, batch {args.batch_size}, D={args.d_model}, layers={args.num_layers}, "
        f"median of {args.repeats} interleaved rounds; tokens identical in every round"
    )
    print(f"{'max_len':>8} {'uncached ms':>12} {'cached ms':>10} {'uncached/cached':>16}")
    ratios = {}
    for length in args.lengths:
        plain = statistics.median(times[length, False])
        cached = statistics.median(times[length, True])
        ratios[length] = plain / cached
        print(f"{length:>8} {plain * 1e3:>12.1f} {cached * 1e3:>10.1f} {ratios[length]:>16.2f}")
    return ratios


if __name__ == "__main__":
    main()
