"""Today's block against the 2017 block, as decoder-only language models on one offline task (chapter 10).

Both models read the reverse task of ``autograder.data`` written as one sequence, source then
target (``a b c <eos> <bos> c b a <eos>``), and are trained with the next-token loss on every
position. They get the same width, depth, heads, batches, optimizer, schedule, number of steps
and seeds; only the block differs:

- "2017": chapter 9's ``DecoderOnly`` (post-norm LayerNorm, sinusoids added to the embeddings,
  ReLU FFN of width 4D, multi-head attention, biases);
- "modern": ``ModernLM`` (pre-norm RMSNorm, RoPE, SwiGLU of width about 8D/3, grouped-query
  attention with half as many key/value heads, no biases).

Scored on the held-out split: the next-token loss on the target tokens (the source is random,
so only the target can be learned), and the exact match, the share of sequences whose every
target token is the model's argmax given the right prefix (which is what greedy decoding
outputs). The result is written to JSON for the lecture, whatever it is.

    python benchmarks/bench_modern_block.py --json benchmarks/results/modern-block-cpu.json
    python benchmarks/bench_modern_block.py --smoke
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import time

import torch

from autograder.data import PAD_ID, make_task
from autograder.reference import families
from autograder.reference.modern_lm import ModernConfig, ModernLM


def sequences(pairs: list[tuple[list[int], list[int]]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens (N, L), is_target (N, L))``: source then target, right-padded; is_target marks the
    positions whose next token is a target token (after ``<bos>``)."""
    width = max(len(s) + len(t) for s, t in pairs)
    tokens = torch.full((len(pairs), width), PAD_ID)
    target = torch.zeros(len(pairs), width, dtype=torch.bool)
    for i, (s, t) in enumerate(pairs):
        tokens[i, : len(s) + len(t)] = torch.tensor(s + t)
        target[i, len(s) : len(s) + len(t) - 1] = True  # position of <bos> .. the last but one target token
    return tokens, target


def build(kind: str, vocab: int, args: argparse.Namespace) -> torch.nn.Module:
    if kind == "2017":
        return families.DecoderOnly(
            families.LanguageModelConfig(
                vocab_size=vocab,
                d_model=args.d_model,
                num_heads=args.heads,
                num_layers=args.layers,
                d_ff=4 * args.d_model,
                dropout=0.0,
                max_len=64,
            )
        )
    return ModernLM(
        ModernConfig(
            vocab_size=vocab,
            d_model=args.d_model,
            num_heads=args.heads,
            num_kv_heads=args.heads // 2,
            num_layers=args.layers,
        )
    )


@torch.no_grad()
def evaluate(model: torch.nn.Module, tokens: torch.Tensor, target: torch.Tensor) -> dict[str, float]:
    model.eval()
    logits = model(tokens)[:, :-1]  # (N, L - 1, V)
    nxt, mask = tokens[:, 1:], target[:, :-1]
    nll = -logits.log_softmax(-1).gather(-1, nxt[..., None])[..., 0]  # (N, L - 1)
    right = (logits.argmax(-1) == nxt) | ~mask
    model.train()
    return {"target_loss": float((nll * mask).sum() / mask.sum()), "exact_match": float(right.all(-1).float().mean())}


def run(kind: str, seed: int, data: dict[str, torch.Tensor], vocab: int, args: argparse.Namespace) -> dict:
    torch.manual_seed(seed)
    model = build(kind, vocab, args)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: min(
            (s + 1) / warmup, 0.5 * (1 + math.cos(math.pi * min(1.0, max(0, s - warmup) / max(1, args.steps - warmup))))
        ),
    )
    g = torch.Generator().manual_seed(seed)
    curve, start = [], time.perf_counter()
    for step in range(1, args.steps + 1):
        idx = torch.randint(len(data["train"]), (args.batch,), generator=g)
        batch = data["train"][idx]
        loss = families.next_token_loss(model(batch), batch, PAD_ID)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % args.eval_every == 0 or step == args.steps:
            curve.append({"step": step, **evaluate(model, data["valid"], data["valid_target"])})
    seconds = time.perf_counter() - start
    return {
        "kind": kind,
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(seconds, 2),
        "curve": curve,
        "final": curve[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=800, help="optimizer steps per run (the budget)")
    parser.add_argument("--batch", type=int, default=64, help="sequences per step")
    parser.add_argument("--d-model", type=int, default=64, help="width D of both models")
    parser.add_argument("--heads", type=int, default=4, help="query heads H (the modern block has H/2 key/value heads)")
    parser.add_argument("--layers", type=int, default=2, help="blocks in each model")
    parser.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (warmup 10%%, cosine to 0)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the runs")
    parser.add_argument("--eval-every", type=int, default=100, help="steps between held-out evaluations")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--json", default=None, help="write the results to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="a few steps of a tiny model: a test that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.batch, args.d_model, args.layers, args.seeds, args.eval_every = 4, 8, 16, 1, [0], 2
    torch.set_num_threads(args.threads)
    task = make_task(
        "reverse", num_train=5000 if not args.smoke else 50, num_valid=500 if not args.smoke else 20, num_test=0, seed=0
    )
    train, _ = sequences(task.train)
    valid, valid_target = sequences(task.valid)
    data = {"train": train, "valid": valid, "valid_target": valid_target}
    vocab = len(task.src_vocab)
    print(
        f"task reverse as one sequence: {len(train)} training, {len(valid)} held-out sequences, vocab {vocab}; "
        f"{args.steps} steps of {args.batch}, seeds {args.seeds}"
    )
    runs = []
    for seed in args.seeds:
        for kind in ("2017", "modern"):
            r = run(kind, seed, data, vocab, args)
            runs.append(r)
            print(
                f"{kind:>6} seed {seed}: {r['parameters']} parameters, {r['train_seconds']:.1f} s, "
                f"target loss {r['final']['target_loss']:.4f}, exact match {100 * r['final']['exact_match']:.1f}%"
            )
    for kind in ("2017", "modern"):
        mine = [r["final"] for r in runs if r["kind"] == kind]
        loss, match = (sum(m[key] for m in mine) / len(mine) for key in ("target_loss", "exact_match"))
        print(f"{kind:>6} mean of {len(mine)} seed(s): target loss {loss:.4f}, exact match {100 * match:.1f}%")
    if args.json:
        meta = {
            "date": datetime.date.today().isoformat(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, {args.threads} torch thread(s)",
            "load_average_1min": os.getloadavg()[0],
        }
        with open(args.json, "w") as f:
            json.dump(
                {"meta": meta, "options": {k: v for k, v in vars(args).items() if k != "json"}, "runs": runs},
                f,
                indent=1,
            )
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
