"""BPE written again with knobs, so that the chapter-9 token checks can name a mistake.

A slow trainer and an encoder with one known mistake switched on, and ``tokenizers``' own
trainer as a second oracle (where the library is installed). Words are strings in the
byte-level alphabet (``reference.bpe.pre_tokenize``); merges are pairs of such strings.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from itertools import pairwise

from autograder.reference import bpe

HAS_TOKENIZERS = importlib.util.find_spec("tokenizers") is not None


def count_without_overlaps(word: Sequence[str], pair: tuple[str, str]) -> int:
    """How often ``pair`` occurs in ``word`` when a match is skipped over, as str.count does."""
    n = j = 0
    while j < len(word) - 1:
        if (word[j], word[j + 1]) == pair:
            n, j = n + 1, j + 1
        j += 1
    return n


def _best_pair(counts: dict[bpe.Pair, int], ids: Mapping[str, int], tie: str) -> bpe.Pair:
    """The most frequent pair; among equal counts, the one the rule ``tie`` prefers."""
    to_bytes = bpe.unicode_to_bytes()
    if tie == "first":  # min() keeps the first of equal keys: the pair seen first in the text
        return min(counts, key=lambda p: -counts[p])
    if tie == "strings":
        return min(counts, key=lambda p: (-counts[p], p))
    if tie == "larger bytes":  # negated bytes, then 1: a longer string with the same start sorts first
        return min(counts, key=lambda p: (-counts[p], [[-to_bytes.get(c, ord(c)) for c in s] + [1] for s in p]))
    return min(counts, key=lambda p: (-counts[p], ids.get(p[0], 1 << 30), ids.get(p[1], 1 << 30)))


def naive_train(
    words: Mapping[str, int], n_merges: int, special_tokens: Sequence[str], tie: str = "ids", weighted: bool = True
) -> list[bpe.Pair]:
    """A slow trainer with knobs, to name mistakes: it recounts every pair after every merge."""
    ids = {tok: i for i, tok in enumerate(bpe._first_tokens(special_tokens))}
    seqs = [(list(w), c if weighted else 1) for w, c in words.items()]
    merges: list[bpe.Pair] = []
    while len(merges) < n_merges:
        counts: dict[bpe.Pair, int] = {}
        for symbols, c in seqs:
            for p in pairwise(symbols):
                counts[p] = counts.get(p, 0) + c
        if not counts:
            break
        a, b = _best_pair(counts, ids, tie)
        merges.append((a, b))
        ids.setdefault(a + b, len(ids))
        for symbols, _ in seqs:
            j = 0
            while j < len(symbols) - 1:
                if symbols[j] == a and symbols[j + 1] == b:
                    symbols[j : j + 2] = [a + b]
                j += 1
    return merges


def library_merges(text: str, vocab_size: int, special_tokens: Sequence[str]) -> list[bpe.Pair] | None:
    """The merges of ``tokenizers``' BpeTrainer, or None where the library is not installed."""
    if not HAS_TOKENIZERS:
        return None
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([text], trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]  # pairs, or "a b" strings in older versions
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in merges]


def encode_variant(
    text: str,
    vocab: Mapping[str, int],
    merges: Sequence[bpe.Pair],
    specials: Sequence[str],
    order: str = "rank",
    words: bool = True,
) -> list[int]:
    """``bpe_encode`` with a mistake: merges by text order, or the text not cut into words."""
    rank = {tuple(m): r for r, m in enumerate(merges)}
    ids = []
    for piece, special in bpe._split_specials(text, specials):
        if special:
            ids.append(vocab[piece])
            continue
        for word in bpe.pre_tokenize(piece) if words else [bpe.to_byte_level(piece)]:
            symbols = list(word)
            while True:
                found = [(rank[p] if order == "rank" else j, j) for j, p in enumerate(pairwise(symbols)) if p in rank]
                if not found:
                    break
                j = min(found)[1]
                symbols[j : j + 2] = [symbols[j] + symbols[j + 1]]
            ids += [vocab[s] for s in symbols]
    return ids


def as_bytes(token: str) -> bytes:
    """A token's bytes (a string of byte-level characters), or its UTF-8 where it is not one."""
    to_bytes = bpe.unicode_to_bytes()
    return bytes(to_bytes[c] for c in token) if all(c in to_bytes for c in token) else token.encode()
