"""Training byte-level BPE: the course's ``train_bpe`` against Hugging Face ``tokenizers`` (chapter 9).

Both learn the same merges from the same text (the script checks it); this times them side
by side and prints ours / theirs. The corpus is the course's lectures (``book/*.md``), as on
the chapter's page. ``tokenizers`` runs on ``--threads`` threads (its Rust thread pool, set
before it is imported); ours is plain Python on one.

Repetitions are interleaved (every size and both trainers in each round) in one process, so
that a slow moment of the machine hits both alike; the median is reported.

    python benchmarks/bench_bpe.py
    python benchmarks/bench_bpe.py --sizes 1000 4000 --threads 4
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000], help="vocabulary sizes to train to")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the median is reported")
    p.add_argument("--threads", type=int, default=1, help="threads of tokenizers' pool (RAYON_NUM_THREADS)")
    p.add_argument("--smoke", action="store_true", help="a slice of the corpus, one size, one round: seconds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # read when tokenizers starts its pool
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from autograder.reference import bpe

    def theirs(text: str, vocab_size: int) -> Tokenizer:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.train_from_iterator(
            [text],
            trainers.BpeTrainer(
                vocab_size=vocab_size,
                special_tokens=list(bpe.SPECIAL_TOKENS),
                show_progress=False,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            ),
        )
        return tok

    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "book").glob("[0-9]*.md")))
    sizes, repeats = (args.sizes, args.repeats) if not args.smoke else ([300], 1)
    if args.smoke:
        text = text[:20_000]
    bpe.split_words("warm up")  # the Unicode classes of the split are built once, on first use
    same = _same_merges(bpe, theirs, text, sizes)
    print(
        f"corpus: the course's lectures, {len(text):,} characters; tokenizers on {args.threads} thread(s); "
        f"same merges: {same}"
    )
    times: dict[tuple[int, str], list[float]] = {(v, who): [] for v in sizes for who in ("ours", "tokenizers")}
    for _ in range(repeats):
        for v in sizes:
            for who, train in (("ours", bpe.train_bpe), ("tokenizers", theirs)):
                start = time.perf_counter()
                train(text, v)
                times[v, who].append(time.perf_counter() - start)
    print(f"{'vocab_size':>10} {'ours s':>8} {'tokenizers s':>13} {'ours/tokenizers':>16}")
    for v in sizes:
        ours, lib = statistics.median(times[v, "ours"]), statistics.median(times[v, "tokenizers"])
        print(f"{v:>10} {ours:>8.3f} {lib:>13.3f} {ours / lib:>16.2f}")


def _same_merges(bpe, theirs, text: str, sizes: list[int]) -> bool:
    """Do both trainers learn the same merges at every size (the timing compares like with like)?"""
    import json

    for v in sizes:
        model = json.loads(theirs(text, v).to_str())["model"]
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]]
        if merges != bpe.train_bpe(text, v):
            return False
    return True


if __name__ == "__main__":
    main()
